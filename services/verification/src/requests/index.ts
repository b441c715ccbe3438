import { AppError, eventMessage, newId, type EventRecord, type Queryable, type Scope } from "@icv/platform";
import { CHANNELS_BY_TYPE, type AssetType } from "@icv/platform";
import { channelFor } from "../channels/registry.ts";
import { createRequestToken, verificationUrl, verifyRequestToken } from "./token.ts";
import type { RequestListFilter, RequestRow, RequestView } from "../store/index.ts";
import type { Verifications } from "../verifications/index.ts";
import { autoVerify, MAX_PROOF_AGE_S, MIN_PROOF_AGE_S, reusableProofs, type AutoVerified, type Offer } from "./reuse.ts";
import { hostedAssets, redirectTarget, type HostedView } from "./hosted.ts";
import { RESEND_GAP_MS } from "../verifications/index.ts";
import { checkCallbackUrl } from "../callback-url.ts";
import {
  DEFAULT_REQUEST_TTL_S,
  MIN_REQUEST_TTL_S,
  MAX_REQUEST_TTL_S,
  MAX_ASSETS,
  ACTION_TYPES,
  MAX_ASSET_STARTS,
  MAX_METADATA_BYTES,
  type CreateRequestInput,
  type RequestDeps,
  invalid,
  checkRedirectUrl,
  text,
  assetRow,
} from "./input.ts";
import { progress, expiry, cancellation } from "./decide.ts";
import { messageTypeOf } from "./input.ts";
import { resolveProjectId } from "../projects/index.ts";
import { brandingOf, outcomeRedirect } from "./branding.ts";

export * from "./input.ts";
export * from "./decide.ts";

/** The verification request use cases. */
export class Requests {
  constructor(private readonly d: RequestDeps) {}

  /** The hosted page's URL of a request (its token is derived from the id and expiry, never stored). */
  urlOf(r: Pick<RequestRow, "id" | "expires_at">): string {
    return verificationUrl(this.d.publicBaseUrl, r.id, createRequestToken(this.d.tokenKey, r.id, r.expires_at));
  }

  /**
   * The request a hosted-page token authorises (every request-scoped RPC starts here): a wrong
   * token, another request's token or an unknown id → not_found (no oracle); the genuine token of
   * an expired request → request_expired. Answers the request and its tenant scope.
   */
  async requireToken(id: string, token: string): Promise<{ request: RequestView; scope: Scope }> {
    const now = this.d.clock.now();
    const check = verifyRequestToken(this.d.tokenKey, id, token, now);
    if (!check.valid && check.reason === "expired") throw new AppError("request_expired", "this verification request has expired");
    const r = check.valid ? await this.d.store.getById(id) : undefined;
    if (!check.valid || !r || r.expires_at.getTime() !== check.expiresAt.getTime()) throw new AppError("not_found", "verification request not found");
    return { request: r, scope: { tenantId: r.tenant_id, env: r.environment } };
  }

  async create(scope: Scope, input: CreateRequestInput): Promise<RequestView> {
    const { clock, store, verifications } = this.d;
    if (!input.assets.length) throw invalid("assets must hold at least one asset", "assets");
    if (input.assets.length > MAX_ASSETS) throw invalid(`assets must hold at most ${MAX_ASSETS} assets`, "assets");
    const assets = input.assets.map(assetRow);
    if (!assets.some((a) => a.required)) throw invalid("at least one asset must be required", "assets");
    const ttl = input.expiresIn ?? DEFAULT_REQUEST_TTL_S;
    if (!Number.isInteger(ttl) || ttl < MIN_REQUEST_TTL_S || ttl > MAX_REQUEST_TTL_S) {
      throw invalid(`expires_in must be an integer from ${MIN_REQUEST_TTL_S} to ${MAX_REQUEST_TTL_S} seconds`, "expires_in");
    }
    if (
      input.maxProofAge !== undefined &&
      (!Number.isInteger(input.maxProofAge) || input.maxProofAge < MIN_PROOF_AGE_S || input.maxProofAge > MAX_PROOF_AGE_S)
    ) {
      throw invalid(`max_proof_age must be an integer from ${MIN_PROOF_AGE_S} to ${MAX_PROOF_AGE_S} seconds`, "max_proof_age");
    }
    const actionType = input.actionType ?? "verification";
    if (!(ACTION_TYPES as readonly string[]).includes(actionType)) throw invalid(`action_type must be one of ${ACTION_TYPES.join(", ")}`, "action_type");
    if (input.clientMetadata && Buffer.byteLength(JSON.stringify(input.clientMetadata)) > MAX_METADATA_BYTES) {
      throw invalid("client_metadata must be at most 4 KB of JSON", "client_metadata");
    }
    const projectId = this.d.projects ? await resolveProjectId(this.d.projects, scope, input.projectId) : null;
    // the project's success_url is the default redirect_url
    const project = this.d.projects ? await this.d.projects.effective(scope, projectId) : undefined;
    const redirectUrl = input.redirectUrl ?? project?.success_url ?? undefined;
    const base = {
      reference_id: text(input.referenceId, "reference_id", 255),
      action_title: text(input.actionContext?.title, "action_context.title", 200),
      action_description: text(input.actionContext?.description, "action_context.description", 1000),
      external_user_id: text(input.externalUserId, "external_user_id", 255),
      redirect_url: redirectUrl === undefined ? null : checkRedirectUrl(redirectUrl),
      callback_url: input.callbackUrl === undefined ? null : await checkCallbackUrl(input.callbackUrl, this.d.allowPrivateTargets, this.d.resolver),
    };

    // every check before the first verification is made, so a refused request leaves none behind
    for (const a of assets) {
      const missing = scope.env === "live" && a.identifier !== null && a.channel !== null ? channelFor(a.type, a.channel).missingProvider(this.d.config) : [];
      if (missing.length)
        throw new AppError("channel_unavailable", `assets[${a.idx}]: channel ${a.channel} is not configured on this service (missing ${missing.join(", ")})`);
    }

    // Assets with identifier and channel get their verification now (an API-only integration
    // drives them); a failure here fails the request before it exists (the verifications already
    // made stay pending and expire on their own).
    const verificationIds: (string | null)[] = [];
    for (const a of assets) {
      if (a.identifier === null || a.channel === null) {
        verificationIds.push(null);
        continue;
      }
      try {
        const v = await verifications.create(scope, {
          type: a.type,
          channel: a.channel,
          identifier: a.identifier,
          externalUserId: base.external_user_id ?? undefined,
          clientMetadata: input.clientMetadata,
          projectId: projectId ?? undefined,
          messageType: messageTypeOf(actionType),
          proofFormat: a.proof_format,
          holderKey: a.holder_key ?? undefined,
        });
        verificationIds.push(v.row.id);
      } catch (e) {
        if (e instanceof AppError) throw new AppError(e.code, `assets[${a.idx}]: ${e.message}`, { details: e.details, extra: e.extra });
        throw e;
      }
    }

    const now = clock.now();
    const id = newId("verificationRequest", now.getTime());
    const row: RequestRow = {
      id,
      tenant_id: scope.tenantId,
      environment: scope.env,
      status: "pending",
      ...base,
      action_type: actionType,
      partial_ok: input.partialOk ?? false,
      client_metadata: input.clientMetadata ?? null,
      created_at: now,
      updated_at: now,
      expires_at: new Date(now.getTime() + ttl * 1000),
      completed_at: null,
      cancelled_at: null,
      max_proof_age: input.maxProofAge ?? null,
      project_id: projectId,
    };
    await store.insert(
      row,
      assets.map((a, i) => ({
        ...a,
        request_id: id,
        status: verificationIds[i] ? "in_progress" : "pending",
        verification_id: verificationIds[i],
      })),
    );
    // a verification that moved before the request row existed was not seen by the consumer
    const r = await store.applyInScope(scope, id, progress(now), now);
    this.d.logger.info(
      { request_id: scope.requestId, tenant_id: scope.tenantId, verification_request_id: id, assets: assets.length, env: scope.env },
      "verification request created",
    );
    return r!.after ?? r!.before;
  }

  /** The request as it stands now; an open one past its expiry is expired first. */
  async get(scope: Scope, id: string): Promise<RequestView> {
    await this.expireDue(scope);
    const r = await this.d.store.get(scope, id);
    if (!r) throw new AppError("not_found", "verification request not found");
    return r;
  }

  async byReference(scope: Scope, referenceId: string): Promise<RequestView> {
    await this.expireDue(scope);
    const r = await this.d.store.newestByReference(scope, referenceId);
    if (!r) throw new AppError("not_found", "no verification request has this reference_id");
    return r;
  }

  async list(scope: Scope, f: RequestListFilter) {
    await this.expireDue(scope);
    return this.d.store.list(scope, f);
  }

  /** pending/partial → cancelled; its pending verifications expire. */
  async cancel(scope: Scope, id: string): Promise<RequestView> {
    await this.expireDue(scope);
    const now = this.d.clock.now();
    const r = await this.d.store.applyInScope(scope, id, cancellation(now), now);
    if (!r) throw new AppError("not_found", "verification request not found");
    if (!r.after) throw new AppError("invalid_state", `the request is ${r.before.status}; only pending or partial requests can be cancelled`);
    return r.after;
  }

  /** Expires open requests past their expires_at (all, or one scope's), with their events. */
  async expireDue(scope?: Scope): Promise<number> {
    const now = this.d.clock.now();
    return this.d.store.expireDue(now, expiry(now), 200, scope);
  }

  /**
   * The event consumer's handler: a verification's status move drives the requests it belongs
   * to, inside the consumer's transaction (so a crash never applies it twice or loses it).
   */
  async onEvent(q: Queryable, event: EventRecord): Promise<void> {
    await this.onEvents(q, [event]);
  }

  /**
   * A batch of events in one transaction: the requests of every verification whose status
   * changed, found with one statement, each brought up to date once (a request's progress is
   * read from its verifications' rows, so once per batch is the same as once per event).
   */
  async onEvents(q: Queryable, events: EventRecord[]): Promise<void> {
    const changed = new Set<string>();
    for (const e of events) {
      const m = eventMessage(e, "verification.status_changed");
      if (m) changed.add(m.verificationId);
    }
    if (!changed.size) return;
    const now = this.d.clock.now();
    for (const id of await this.d.store.requestIdsOfMany(q, [...changed])) await this.d.store.apply(q, id, progress(now), now);
  }

  // ---- the hosted page (and smart reuse): authorised by the request token alone ----

  /**
   * requireToken for the page: a genuine token of an expired request may still read the final
   * status (`allowExpired`, then without the assets). The request is brought up to date first:
   * expiry, and a verification that moved a moment ago but has not reached the request yet.
   */
  private async hostedAccess(id: string, token: string, allowExpired = false): Promise<{ request: RequestView; scope: Scope; tokenExpired: boolean }> {
    let found: { request: RequestView; scope: Scope } | undefined;
    try {
      found = await this.requireToken(id, token);
    } catch (e) {
      // request_expired is only answered after the token's MAC checked out
      if (!(allowExpired && e instanceof AppError && e.code === "request_expired")) throw e;
    }
    const row = found?.request ?? (await this.d.store.getById(id));
    if (!row) throw new AppError("not_found", "verification request not found");
    const scope: Scope = found?.scope ?? { tenantId: row.tenant_id, env: row.environment };
    await this.expireDue(scope);
    const now = this.d.clock.now();
    const r = await this.d.store.applyInScope(scope, id, progress(now), now);
    return { request: r ? (r.after ?? r.before) : row, scope, tokenExpired: !found };
  }

  /** The page's view of a request: assets with their channels, availability and open challenges. */
  async hostedView(id: string, token: string, shownCode?: { idx: number; code: string }): Promise<HostedView> {
    const { request, scope, tokenExpired } = await this.hostedAccess(id, token, true);
    const project = await this.d.projects?.effective(scope, request.project_id ?? null);
    const redirectTo = outcomeRedirect(request, project, redirectTarget(request));
    if (tokenExpired) return { request, assets: [], redirectTo, tokenExpired, branding: brandingOf(project) };
    const rows = new Map<number, Awaited<ReturnType<Verifications["get"]>>>();
    for (const a of request.assets) {
      if (a.verification_id && a.status === "in_progress") rows.set(a.idx, await this.d.verifications.get(scope, a.verification_id));
    }
    const domains = await this.domainStates(scope, [...rows.values()], request.assets);
    return {
      request,
      assets: hostedAssets(request, rows, this.d.config, shownCode, domains),
      redirectTo,
      tokenExpired,
      branding: brandingOf(project),
    };
  }

  /** The check state of the open and the verified domain assets (one query, and none when the request has no domain asset). */
  private domainStates(
    scope: Scope,
    rows: Awaited<ReturnType<Verifications["get"]>>[],
    assets: { type: string; status: string; verification_id: string | null }[],
  ) {
    const ids = rows.filter((v) => v.status === "pending" && channelFor(v.type, v.channel).method === "domain_check").map((v) => v.id);
    // verified domain assets: when control was last re-checked (email ones have no check: no last_check, nothing shown)
    for (const a of assets) if (a.type === "domain" && a.status === "verified" && a.verification_id) ids.push(a.verification_id);
    return this.d.verifications.domainStates(scope, ids);
  }

  /** The page's "check now" of a domain asset: the same check (count, 5 s limit) as the API's. */
  async hostedCheck(id: string, token: string, idx: number): Promise<HostedView> {
    const { scope, asset } = await this.openAsset(id, token, idx);
    if (asset.status === "verified") throw new AppError("already_verified", "this asset is already verified");
    if (!asset.verification_id || asset.status !== "in_progress") throw new AppError("invalid_state", "start this asset first");
    await this.d.verifications.checkDomain(scope, asset.verification_id);
    return this.hostedView(id, token);
  }

  /** A request the page may act on: open, and the asset exists. */
  private async openAsset(id: string, token: string, idx: number) {
    const t = await this.hostedAccess(id, token);
    const r = t.request;
    if (r.status === "expired") throw new AppError("request_expired", "this verification request has expired");
    if (r.status !== "pending" && r.status !== "partial") throw new AppError("invalid_state", `the request is ${r.status}`);
    const asset = r.assets.find((a) => a.idx === idx);
    if (!asset) throw new AppError("not_found", `the request has no asset ${idx}`);
    return { ...t, asset };
  }

  /**
   * Starts (or restarts) an asset from the page: the identifier the request left null, a channel
   * among the allowed ones; a verification is made in the request's scope and the asset follows it.
   */
  async hostedStart(id: string, token: string, idx: number, input: { identifier?: string; channel?: string; delivery?: string }): Promise<HostedView> {
    const { scope, asset, request } = await this.openAsset(id, token, idx);
    if (asset.status === "verified") throw new AppError("already_verified", "this asset is already verified");
    if (asset.starts > MAX_ASSET_STARTS)
      throw new AppError("invalid_state", `this has failed: it was started ${MAX_ASSET_STARTS} times, the most allowed, and cannot be started again`);
    const type = asset.type as AssetType;
    const allowed = asset.allowed_channels ?? (asset.channel ? [asset.channel] : [...CHANNELS_BY_TYPE[type]]);
    const channel = input.channel ?? asset.channel ?? (allowed.length === 1 ? allowed[0] : undefined);
    if (!channel) throw invalid(`channel is required; one of ${allowed.join(", ")}`, "channel");
    if (!allowed.includes(channel)) throw invalid(`channel must be one of ${allowed.join(", ")}`, "channel");
    const identifier = asset.identifier ?? input.identifier;
    if (!identifier) throw invalid("identifier is required for this asset", "identifier");
    if (asset.identifier !== null && input.identifier !== undefined && input.identifier !== asset.identifier) {
      throw invalid("this asset's identifier was set by the request and cannot be changed", "identifier");
    }
    // a restart that sends a new code keeps the resend gap (the page cannot be used to flood a mailbox or a phone)
    if (channelFor(type, channel).sends?.code(input.delivery) && asset.verification_id && asset.status === "in_progress") {
      const current = await this.d.verifications.get(scope, asset.verification_id);
      const waitMs = current.created_at.getTime() + RESEND_GAP_MS - this.d.clock.now().getTime();
      const sent = channelFor(current.type, current.channel).sends?.code(current.delivery);
      if (sent && current.status === "pending" && waitMs > 0) {
        const retryAfter = Math.ceil(waitMs / 1000);
        throw new AppError("resend_too_soon", `a code was sent less than ${RESEND_GAP_MS / 1000} s ago; try again in ${retryAfter} s`, {
          extra: { retry_after: retryAfter },
        });
      }
    }
    // counted before the verification is made (a start refused by a send limit is given back)
    const starts = await this.d.store.claimStart(scope, id, idx, MAX_ASSET_STARTS, this.d.clock.now());
    if (starts === undefined) throw new AppError("invalid_state", "the request is no longer open");
    if (starts > MAX_ASSET_STARTS) {
      throw new AppError("max_attempts_exceeded", `this was started ${MAX_ASSET_STARTS} times, the most allowed; it has failed and cannot be started again`);
    }
    const v = await this.d.verifications
      .create(scope, {
        type,
        channel,
        identifier,
        externalUserId: request.external_user_id ?? undefined,
        clientMetadata: request.client_metadata ?? undefined,
        delivery: input.delivery,
        projectId: request.project_id ?? undefined,
        messageType: messageTypeOf(request.action_type),
        proofFormat: asset.proof_format,
        holderKey: asset.holder_key ?? undefined,
      })
      .catch(async (e: unknown) => {
        await this.d.store.releaseStart(scope, id, idx, MAX_ASSET_STARTS);
        throw e;
      });
    const now = this.d.clock.now();
    if (!(await this.d.store.assignAsset(scope, id, idx, { identifier: v.row.identifier, channel, verificationId: v.row.id }, now))) {
      throw new AppError("invalid_state", "the request is no longer open");
    }
    this.d.logger.info(
      { tenant_id: scope.tenantId, verification_request_id: id, asset_index: idx, verification_id: v.row.id, channel },
      "request asset started from the hosted page",
    );
    return this.hostedView(id, token, v.code ? { idx, code: v.code } : undefined);
  }

  /** The user's answer to an asset's challenge (code, signature or bot token), as the verification's submit takes it. */
  async hostedSubmit(
    id: string,
    token: string,
    idx: number,
    input: { challengeCode?: string; signature?: string; botToken?: string; apiKey?: string; apiSecret?: string },
  ): Promise<HostedView> {
    const { scope, asset } = await this.openAsset(id, token, idx);
    if (asset.status === "verified") throw new AppError("already_verified", "this asset is already verified");
    if (!asset.verification_id || asset.status !== "in_progress") throw new AppError("invalid_state", "start this asset first");
    await this.d.verifications.submit(scope, asset.verification_id, input);
    return this.hostedView(id, token);
  }

  /** Test-mode requests only: completes an asset's verification at once (the page's test button). */
  async hostedTestVerify(id: string, token: string, idx: number): Promise<HostedView> {
    const { scope, asset } = await this.openAsset(id, token, idx);
    if (scope.env !== "test") throw new AppError("test_mode_required", "only test-mode requests can be completed without a challenge");
    if (!asset.verification_id || asset.status !== "in_progress") throw new AppError("invalid_state", "start this asset first");
    await this.d.verifications.testVerify(scope, asset.verification_id);
    return this.hostedView(id, token);
  }

  /**
   * Where the end user goes after signing in for this verification: the request's redirect_url
   * once the request settled, else back to its hosted page; undefined when no request drives it.
   */
  async returnUrl(scope: Scope, verificationId: string): Promise<string | undefined> {
    const id = await this.d.store.requestIdOfVerification(scope, verificationId);
    if (!id) return undefined;
    const now = this.d.clock.now();
    const r = await this.d.store.applyInScope(scope, id, progress(now), now);
    const request = r ? (r.after ?? r.before) : undefined;
    return request ? (redirectTarget(request) ?? this.urlOf(request)) : undefined;
  }

  // ---- smart reuse (reuse.ts), authorised by the request token ----

  /** The end user's existing proofs usable for the request's unverified assets. */
  async reusableProofs(id: string, token: string): Promise<Offer[]> {
    const { request, scope } = await this.requireToken(id, token);
    return reusableProofs(this.d, scope, request);
  }

  /** Completes asset `idx` with a new proof made from an existing one (method reused_proof). */
  async autoVerify(id: string, token: string, idx: number, verificationId?: string): Promise<AutoVerified> {
    const { request, scope } = await this.requireToken(id, token);
    const now = this.d.clock.now();
    return autoVerify(this.d, scope, request, idx, progress(now), verificationId);
  }
}
