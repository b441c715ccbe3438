/** What the hosted page does with a request (its token): the view, starting an asset, answering it, checking a domain, test-verify, reusing a proof. */
import { AppError, type Scope } from "@icv/platform";
import { CHANNELS_BY_TYPE, type AssetType } from "@icv/platform";
import { channelFor } from "../channels/registry.ts";
import type { RequestView } from "../store/rows.ts";
import { autoVerify, reusableProofs, type AutoVerified, type Offer } from "./reuse.ts";
import { hostedAssets, redirectTarget, type HostedView } from "./hosted.ts";
import { RESEND_GAP_MS } from "../verifications/deps.ts";
import { createVerification } from "../verifications/create.ts";
import { checkDomain } from "../verifications/domain-checks.ts";
import { domainStates, getVerification } from "../verifications/read.ts";
import { submitChallenge, testVerify } from "../verifications/submit.ts";
import { MAX_ASSET_STARTS, type RequestDeps, invalid } from "./input.ts";
import { progress } from "./decide.ts";
import { messageTypeOf } from "./input.ts";
import { brandingOf, outcomeRedirect } from "./branding.ts";

import { expireDueRequests, requireToken } from "./lifecycle.ts";

// ---- the hosted page (and smart reuse): authorised by the request token alone ----

/**
 * requireToken for the page: a genuine token of an expired request may still read the final
 * status (`allowExpired`, then without the assets). The request is brought up to date first:
 * expiry, and a verification that moved a moment ago but has not reached the request yet.
 */
async function hostedAccess(
  deps: RequestDeps,
  id: string,
  token: string,
  allowExpired = false,
): Promise<{ request: RequestView; scope: Scope; tokenExpired: boolean }> {
  let found: { request: RequestView; scope: Scope } | undefined;
  try {
    found = await requireToken(deps, id, token);
  } catch (e) {
    // request_expired is only answered after the token's MAC checked out
    if (!(allowExpired && e instanceof AppError && e.code === "request_expired")) throw e;
  }
  const row = found?.request ?? (await deps.store.getById(id));
  if (!row) throw new AppError("not_found", "verification request not found");
  const scope: Scope = found?.scope ?? { tenantId: row.tenant_id, env: row.environment };
  await expireDueRequests(deps, scope);
  const now = deps.clock.now();
  const r = await deps.store.applyInScope(scope, id, progress(now), now);
  return { request: r ? (r.after ?? r.before) : row, scope, tokenExpired: !found };
}

/** The page's view of a request: assets with their channels, availability and open challenges. */
export async function hostedView(deps: RequestDeps, id: string, token: string, shownCode?: { idx: number; code: string }): Promise<HostedView> {
  const { request, scope, tokenExpired } = await hostedAccess(deps, id, token, true);
  const project = await deps.projects?.effective(scope, request.project_id ?? null);
  const redirectTo = outcomeRedirect(request, project, redirectTarget(request));
  if (tokenExpired) return { request, assets: [], redirectTo, tokenExpired, branding: brandingOf(project) };
  const rows = new Map<number, Awaited<ReturnType<typeof getVerification>>>();
  for (const a of request.assets) {
    if (a.verification_id && a.status === "in_progress") rows.set(a.idx, await getVerification(deps.verifications, scope, a.verification_id));
  }
  const domains = await assetDomainStates(deps, scope, [...rows.values()], request.assets);
  return {
    request,
    assets: hostedAssets(request, rows, deps.config, shownCode, domains),
    redirectTo,
    tokenExpired,
    branding: brandingOf(project),
  };
}

/** The check state of the open and the verified domain assets (one query, and none when the request has no domain asset). */
function assetDomainStates(
  deps: RequestDeps,
  scope: Scope,
  rows: Awaited<ReturnType<typeof getVerification>>[],
  assets: { type: string; status: string; verification_id: string | null }[],
) {
  const ids = rows.filter((v) => v.status === "pending" && channelFor(v.type, v.channel).method === "domain_check").map((v) => v.id);
  // verified domain assets: when control was last re-checked (email ones have no check: no last_check, nothing shown)
  for (const a of assets) if (a.type === "domain" && a.status === "verified" && a.verification_id) ids.push(a.verification_id);
  return domainStates(deps.verifications, scope, ids);
}

/** The page's "check now" of a domain asset: the same check (count, 5 s limit) as the API's. */
export async function hostedCheck(deps: RequestDeps, id: string, token: string, idx: number): Promise<HostedView> {
  const { scope, asset } = await openAsset(deps, id, token, idx);
  if (asset.status === "verified") throw new AppError("already_verified", "this asset is already verified");
  if (!asset.verification_id || asset.status !== "in_progress") throw new AppError("invalid_state", "start this asset first");
  await checkDomain(deps.verifications, scope, asset.verification_id);
  return hostedView(deps, id, token);
}

/** A request the page may act on: open, and the asset exists. */
async function openAsset(deps: RequestDeps, id: string, token: string, idx: number) {
  const t = await hostedAccess(deps, id, token);
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
export async function hostedStart(
  deps: RequestDeps,
  id: string,
  token: string,
  idx: number,
  input: { identifier?: string; channel?: string; delivery?: string },
): Promise<HostedView> {
  const { scope, asset, request } = await openAsset(deps, id, token, idx);
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
    const current = await getVerification(deps.verifications, scope, asset.verification_id);
    const waitMs = current.created_at.getTime() + RESEND_GAP_MS - deps.clock.now().getTime();
    const sent = channelFor(current.type, current.channel).sends?.code(current.delivery);
    if (sent && current.status === "pending" && waitMs > 0) {
      const retryAfter = Math.ceil(waitMs / 1000);
      throw new AppError("resend_too_soon", `a code was sent less than ${RESEND_GAP_MS / 1000} s ago; try again in ${retryAfter} s`, {
        extra: { retry_after: retryAfter },
      });
    }
  }
  // counted before the verification is made (a start refused by a send limit is given back)
  const starts = await deps.store.claimStart(scope, id, idx, MAX_ASSET_STARTS, deps.clock.now());
  if (starts === undefined) throw new AppError("invalid_state", "the request is no longer open");
  if (starts > MAX_ASSET_STARTS) {
    throw new AppError("max_attempts_exceeded", `this was started ${MAX_ASSET_STARTS} times, the most allowed; it has failed and cannot be started again`);
  }
  const v = await createVerification(deps.verifications, scope, {
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
  }).catch(async (e: unknown) => {
    await deps.store.releaseStart(scope, id, idx, MAX_ASSET_STARTS);
    throw e;
  });
  const now = deps.clock.now();
  if (!(await deps.store.assignAsset(scope, id, idx, { identifier: v.row.identifier, channel, verificationId: v.row.id }, now))) {
    throw new AppError("invalid_state", "the request is no longer open");
  }
  deps.logger.info(
    { tenant_id: scope.tenantId, verification_request_id: id, asset_index: idx, verification_id: v.row.id, channel },
    "request asset started from the hosted page",
  );
  return hostedView(deps, id, token, v.code ? { idx, code: v.code } : undefined);
}

/** The user's answer to an asset's challenge (code, signature or bot token), as the verification's submit takes it. */
export async function hostedSubmit(
  deps: RequestDeps,
  id: string,
  token: string,
  idx: number,
  input: { challengeCode?: string; signature?: string; botToken?: string; apiKey?: string; apiSecret?: string },
): Promise<HostedView> {
  const { scope, asset } = await openAsset(deps, id, token, idx);
  if (asset.status === "verified") throw new AppError("already_verified", "this asset is already verified");
  if (!asset.verification_id || asset.status !== "in_progress") throw new AppError("invalid_state", "start this asset first");
  await submitChallenge(deps.verifications, scope, asset.verification_id, input);
  return hostedView(deps, id, token);
}

/** Test-mode requests only: completes an asset's verification at once (the page's test button). */
export async function hostedTestVerify(deps: RequestDeps, id: string, token: string, idx: number): Promise<HostedView> {
  const { scope, asset } = await openAsset(deps, id, token, idx);
  if (scope.env !== "test") throw new AppError("test_mode_required", "only test-mode requests can be completed without a challenge");
  if (!asset.verification_id || asset.status !== "in_progress") throw new AppError("invalid_state", "start this asset first");
  await testVerify(deps.verifications, scope, asset.verification_id);
  return hostedView(deps, id, token);
}

// ---- smart reuse (reuse.ts), authorised by the request token ----

/** The end user's existing proofs usable for the request's unverified assets. */
export async function hostedReusableProofs(deps: RequestDeps, id: string, token: string): Promise<Offer[]> {
  const { request, scope } = await requireToken(deps, id, token);
  return reusableProofs(deps, scope, request);
}

/** Completes asset `idx` with a new proof made from an existing one (method reused_proof). */
export async function hostedAutoVerify(deps: RequestDeps, id: string, token: string, idx: number, verificationId?: string): Promise<AutoVerified> {
  const { request, scope } = await requireToken(deps, id, token);
  const now = deps.clock.now();
  return autoVerify(deps, scope, request, idx, progress(now), verificationId);
}
