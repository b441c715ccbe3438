import { isIP } from "node:net";
import {
  AppError, addressRefusal, newId, OutboundError, parseTargetUrl, systemResolver,
  type Clock, type Config, type EventRecord, type Logger, type OutboxEvent, type Queryable, type Resolver, type Scope,
} from "@icv/platform";
import { ASSET_TYPES, CHANNELS_BY_TYPE, missingProvider } from "./channels.ts";
import { normalizeIdentifier, type AssetType } from "./identifiers.ts";
import { createRequestToken, verificationUrl } from "./request-token.ts";
import type {
  AssetStatus, Decide, RequestAssetRow, RequestChange, RequestListFilter, RequestRow, RequestStatus, RequestStore, RequestView, Status,
} from "./store.ts";
import type { Verifications } from "./verifications.ts";

export const DEFAULT_REQUEST_TTL_S = 86_400;
export const MIN_REQUEST_TTL_S = 60;
export const MAX_REQUEST_TTL_S = 604_800;
export const MAX_ASSETS = 10;
export const ACTION_TYPES = ["verification", "2fa", "login", "custom"] as const;
const MAX_METADATA_BYTES = 4096;

export interface AssetInput {
  type: string;
  identifier?: string;
  channel?: string;
  allowedChannels?: string[];
  required?: boolean;
}

export interface CreateRequestInput {
  assets: AssetInput[];
  referenceId?: string;
  actionType?: string;
  actionContext?: { title?: string; description?: string };
  redirectUrl?: string;
  callbackUrl?: string;
  expiresIn?: number;
  partialOk?: boolean;
  externalUserId?: string;
  clientMetadata?: Record<string, unknown>;
}

export interface RequestDeps {
  store: RequestStore;
  verifications: Verifications;
  clock: Clock;
  config: Config;
  /** HMAC key of the verification_url tokens. */
  tokenKey: string;
  publicBaseUrl: string;
  /** ALLOW_PRIVATE_TARGETS: accept loopback and private callback URLs (tests, local setups). */
  allowPrivateTargets: boolean;
  resolver?: Resolver;
  logger: Logger;
}

const OPEN: ReadonlySet<RequestStatus> = new Set(["pending", "partial"]);
const invalid = (message: string, field?: string) =>
  new AppError("validation_error", message, field ? { details: [{ field, message, code: "invalid" }] } : {});

/** The asset status that a verification's status stands for. A revoked proof no longer counts. */
export function assetStatusOf(v: Status): AssetStatus {
  if (v === "pending") return "in_progress";
  if (v === "revoked") return "failed";
  return v;
}

/** The proofs of a request's verified assets, as request events carry them. */
export function proofsOf(r: RequestView) {
  return r.assets
    .filter((a) => a.v_status === "verified" && a.proof_token)
    .map((a) => ({ asset_index: a.idx, type: a.type, verification_id: a.verification_id, proof_token: a.proof_token, expires_at: a.proof_expires_at?.toISOString() }));
}

/** A `verification_request.*` outbox event of the request in its new status. */
export function requestEvent(r: RequestView, status: RequestStatus, at: Date): OutboxEvent {
  return {
    aggregateType: "verification_request",
    aggregateId: r.id,
    eventType: `verification_request.${status}`,
    tenantId: r.tenant_id,
    environment: r.environment,
    payload: {
      request_id: r.id,
      reference_id: r.reference_id,
      status,
      proofs: proofsOf(r),
      ...(r.external_user_id ? { external_user_id: r.external_user_id } : {}),
      changed_at: at.toISOString(),
      ...(r.callback_url ? { callback_url: r.callback_url } : {}),
    },
  };
}

const changedAssets = (r: RequestView, statuses: AssetStatus[]) =>
  r.assets.flatMap((a, i) => (a.status === statuses[i] ? [] : [{ idx: a.idx, status: statuses[i] }]));

/**
 * The state machine of DECISIONS.md, as a function of the assets' verifications: every required
 * asset verified → completed; some required asset verified → partial (its event only when
 * partial_ok). Open requests only; undefined when nothing changes.
 */
export function progress(at: Date): Decide {
  return (r) => {
    if (!OPEN.has(r.status)) return undefined;
    const statuses = r.assets.map((a) => (a.v_status ? assetStatusOf(a.v_status) : a.status));
    // an asset verified after the request's expiry does not count (the expiry came first)
    const counts = r.assets.map((a, i) => (statuses[i] === "verified" && a.v_verified_at && a.v_verified_at > r.expires_at ? "expired" : statuses[i]));
    const required = r.assets.map((a, i) => ({ a, s: counts[i] })).filter((x) => x.a.required);
    let status: RequestStatus = r.status;
    if (required.every((x) => x.s === "verified")) status = "completed";
    else if (required.some((x) => x.s === "verified")) status = "partial";
    const assets = changedAssets(r, statuses);
    if (status === r.status && !assets.length) return undefined;
    const after: RequestView = { ...r, status };
    const events =
      status === r.status ? [] : status === "completed" || (status === "partial" && r.partial_ok) ? [requestEvent(after, status, at)] : [];
    return { status, assets, events };
  };
}

/** Open → expired (event verification_request.expired) or cancelled (no event); unfinished assets expire with their verifications. */
function close(to: "expired" | "cancelled", at: Date): Decide {
  return (r) => {
    if (!OPEN.has(r.status)) return undefined;
    const statuses = r.assets.map((a): AssetStatus => (a.v_status === "verified" ? "verified" : a.status === "failed" || a.v_status === "failed" ? "failed" : "expired"));
    const change: RequestChange = { status: to, assets: changedAssets(r, statuses), events: [], expireVerifications: true };
    if (to === "expired") change.events.push(requestEvent({ ...r, status: to }, to, at));
    return change;
  };
}
export const expiry = (at: Date) => close("expired", at);
export const cancellation = (at: Date) => close("cancelled", at);

/** A tenant's callback URL: http(s), no credentials, and (unless private targets are allowed) a public address. */
export async function checkCallbackUrl(input: string, allowPrivate: boolean, resolver: Resolver = systemResolver): Promise<string> {
  let url: URL;
  try {
    url = parseTargetUrl(input.trim());
  } catch (e) {
    if (e instanceof OutboundError) throw invalid(`invalid callback_url: ${e.message}`, "callback_url");
    throw e;
  }
  if (!allowPrivate) {
    const host = url.hostname.replace(/^\[|\]$/g, "");
    const addresses = isIP(host) ? [host] : (await resolver(host).catch(() => [])).map((a) => a.address);
    if (!addresses.length) throw invalid(`invalid callback_url: ${host} does not resolve`, "callback_url");
    const refusal = addresses.map(addressRefusal).find(Boolean);
    if (refusal) throw invalid(`invalid callback_url: ${refusal}`, "callback_url");
  }
  return url.toString();
}

function checkRedirectUrl(input: string): string {
  try {
    return parseTargetUrl(input.trim()).toString();
  } catch (e) {
    if (e instanceof OutboundError) throw invalid(`invalid redirect_url: ${e.message}`, "redirect_url");
    throw e;
  }
}

const text = (v: string | undefined, name: string, max: number): string | null => {
  if (v === undefined) return null;
  if (v.length < 1 || v.length > max) throw invalid(`${name} must be 1 to ${max} characters`, name);
  return v;
};

/** Validates one asset; answers its row (identifier normalized) without request id and status. */
function assetRow(a: AssetInput, i: number): Omit<RequestAssetRow, "request_id" | "status" | "verification_id"> {
  const f = `assets[${i}]`;
  if (!(ASSET_TYPES as string[]).includes(a.type)) throw invalid(`${f}.type must be one of ${ASSET_TYPES.join(", ")}`, `${f}.type`);
  const type = a.type as AssetType;
  const channels = CHANNELS_BY_TYPE[type];
  const allowed = a.allowedChannels?.length ? [...new Set(a.allowedChannels)] : null;
  for (const c of allowed ?? []) {
    if (!channels.includes(c)) throw new AppError("invalid_channel_for_type", `${f}.allowed_channels: ${c} is not a channel of type ${type}; use ${channels.join(", ")}`);
  }
  if (a.channel !== undefined) {
    if (!channels.includes(a.channel)) throw new AppError("invalid_channel_for_type", `${f}.channel ${a.channel} is not valid for type ${type}; use one of ${channels.join(", ")}`);
    if (allowed && !allowed.includes(a.channel)) throw invalid(`${f}.channel must be one of its allowed_channels`, `${f}.channel`);
  }
  let identifier: string | null = null;
  if (a.identifier !== undefined) {
    try {
      identifier = normalizeIdentifier(type, a.channel ?? allowed?.[0] ?? channels[0], a.identifier).value;
    } catch (e) {
      if (e instanceof AppError) throw new AppError(e.code, `${f}.identifier: ${e.message}`, { details: e.details, extra: e.extra });
      throw e;
    }
  }
  return { idx: i, type, identifier, channel: a.channel ?? null, allowed_channels: allowed, required: a.required ?? true };
}

/** The verification request use cases. */
export class Requests {
  constructor(private readonly d: RequestDeps) {}

  /** The hosted page's URL of a request (its token is derived from the id and expiry, never stored). */
  urlOf(r: Pick<RequestRow, "id" | "expires_at">): string {
    return verificationUrl(this.d.publicBaseUrl, r.id, createRequestToken(this.d.tokenKey, r.id, r.expires_at));
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
    const actionType = input.actionType ?? "verification";
    if (!(ACTION_TYPES as readonly string[]).includes(actionType)) throw invalid(`action_type must be one of ${ACTION_TYPES.join(", ")}`, "action_type");
    if (input.clientMetadata && Buffer.byteLength(JSON.stringify(input.clientMetadata)) > MAX_METADATA_BYTES) {
      throw invalid("client_metadata must be at most 4 KB of JSON", "client_metadata");
    }
    const base = {
      reference_id: text(input.referenceId, "reference_id", 255),
      action_title: text(input.actionContext?.title, "action_context.title", 200),
      action_description: text(input.actionContext?.description, "action_context.description", 1000),
      external_user_id: text(input.externalUserId, "external_user_id", 255),
      redirect_url: input.redirectUrl === undefined ? null : checkRedirectUrl(input.redirectUrl),
      callback_url: input.callbackUrl === undefined ? null : await checkCallbackUrl(input.callbackUrl, this.d.allowPrivateTargets, this.d.resolver),
    };

    // every check before the first verification is made, so a refused request leaves none behind
    for (const a of assets) {
      const missing = scope.env === "live" && a.identifier !== null && a.channel !== null ? missingProvider(a.type as AssetType, a.channel, this.d.config) : [];
      if (missing.length) throw new AppError("channel_unavailable", `assets[${a.idx}]: channel ${a.channel} is not configured on this service (missing ${missing.join(", ")})`);
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
    };
    await store.insert(
      row,
      assets.map((a, i) => ({ ...a, request_id: id, status: verificationIds[i] ? "in_progress" : "pending", verification_id: verificationIds[i] })),
    );
    // a verification that moved before the request row existed was not seen by the consumer
    const r = await store.applyInScope(scope, id, progress(now), now);
    this.d.logger.info({ request_id: scope.requestId, tenant_id: scope.tenantId, verification_request_id: id, assets: assets.length, env: scope.env }, "verification request created");
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
    if (event.aggregateType !== "verification" || event.eventType !== "verification.status_changed") return;
    const now = this.d.clock.now();
    for (const id of await this.d.store.requestIdsOf(q, event.aggregateId)) await this.d.store.apply(q, id, progress(now), now);
  }
}
