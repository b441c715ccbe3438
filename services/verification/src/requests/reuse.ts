/**
 * Smart reuse: an end user who already holds a valid proof for an asset (same tenant and
 * environment, same external_user_id, same type and identifier) completes that asset of a
 * request without a new challenge. The asset gets a NEW verification with a NEW proof that
 * records `method: reused_proof` and the verification it came from; the request then moves as
 * with any verification (its own events drive it).
 */
import { AppError, newId, type Clock, type Logger, type Scope } from "@icv/platform";
import { CHANNELS_BY_TYPE, type AssetType } from "@icv/platform";
import { channelFor } from "../channels/registry.ts";
import type { RequestAssetView, RequestStore, RequestView, ReuseCandidateRow, VerificationRow, Decide } from "../store/index.ts";
import { DEFAULT_PROOF_TTL_S, MAX_ATTEMPTS, type Verifications } from "../verifications/index.ts";

/** Bounds of a request's max_proof_age (seconds): one minute to one year (the longest proof lifetime). */
export const MIN_PROOF_AGE_S = 60;
export const MAX_PROOF_AGE_S = 31_536_000;
/** A proof that expires sooner than this is not offered (a new proof lives at least this long). */
const MIN_REMAINING_S = 60;

export interface ReuseDeps {
  store: RequestStore;
  verifications: Verifications;
  clock: Clock;
  logger: Logger;
}

/** One existing proof the end user may reuse for one asset; the identifier is masked. */
export interface Offer {
  assetIndex: number;
  verificationId: string;
  type: string;
  channel: string;
  identifier: string;
  verifiedAt: Date;
  proofExpiresAt: Date;
}

const OPEN = new Set(["pending", "partial"]);
const isVerified = (a: RequestAssetView) => a.status === "verified" || a.v_status === "verified";

/** What an asset accepts: its canonical identifier (null: any) and channels (null: any). */
function assetMatch(a: RequestAssetView): { canonical: string | null; channels: string[] | null } {
  const type = a.type as AssetType;
  const channels = a.channel ? [a.channel] : a.allowed_channels?.length ? a.allowed_channels : null;
  const canonical = a.identifier === null ? null : channelFor(type, channels?.[0] ?? CHANNELS_BY_TYPE[type][0]).normalize(a.identifier).canonical;
  return { canonical, channels };
}

/** The oldest verified_at the request accepts (max_proof_age before its creation), or null. */
const oldestAccepted = (r: RequestView) => (r.max_proof_age === null ? null : new Date(r.created_at.getTime() - r.max_proof_age * 1000));

async function candidatesFor(d: ReuseDeps, scope: Scope, r: RequestView, a: RequestAssetView, now: Date): Promise<ReuseCandidateRow[]> {
  if (!r.external_user_id) return [];
  return d.store.reuseCandidates(scope, {
    externalUserId: r.external_user_id,
    type: a.type,
    ...assetMatch(a),
    minProofExpiry: new Date(now.getTime() + MIN_REMAINING_S * 1000),
  });
}

const offer = (a: RequestAssetView, c: ReuseCandidateRow): Offer => ({
  assetIndex: a.idx,
  verificationId: c.id,
  type: c.type,
  channel: c.channel,
  identifier: channelFor(c.type, c.channel).mask(c.identifier),
  verifiedAt: c.verified_at,
  proofExpiresAt: c.proof_expires_at,
});

/** The reusable proofs of each unverified asset of an open request (none for a closed one), newest first per asset. */
export async function reusableProofs(d: ReuseDeps, scope: Scope, r: RequestView): Promise<Offer[]> {
  if (!OPEN.has(r.status) || !r.external_user_id) return [];
  const now = d.clock.now();
  const oldest = oldestAccepted(r);
  const out: Offer[] = [];
  for (const a of r.assets) {
    if (isVerified(a)) continue;
    for (const c of await candidatesFor(d, scope, r, a, now)) if (!oldest || c.verified_at >= oldest) out.push(offer(a, c));
  }
  return out;
}

/** Refuses a request that cannot take an asset any more. */
function requireOpen(r: RequestView, now: Date): void {
  if (r.status === "expired" || (OPEN.has(r.status) && r.expires_at <= now)) throw new AppError("request_expired", "this verification request has expired");
  if (!OPEN.has(r.status)) throw new AppError("invalid_state", `the request is ${r.status}; its assets can no longer be completed`);
}

function requireAsset(r: RequestView, idx: number): RequestAssetView {
  const a = r.assets.find((x) => x.idx === idx);
  if (!a) throw new AppError("not_found", `the request has no asset ${idx}`);
  if (isVerified(a)) throw new AppError("already_verified", `asset ${idx} is already verified`);
  return a;
}

export interface AutoVerified {
  request: RequestView;
  verification: VerificationRow;
}

/**
 * Completes asset `idx` from an existing proof (the chosen `verificationId`, else the newest one
 * offered). Checks, in order: request open (request_expired, invalid_state), asset exists and is
 * not verified (not_found, already_verified), an existing proof (no_existing_proof), its age
 * (proof_too_old). The new proof is issued first (idempotent by the new id); when the locked
 * re-check then refuses, that proof is withdrawn.
 */
export async function autoVerify(d: ReuseDeps, scope: Scope, r: RequestView, idx: number, decide: Decide, verificationId?: string): Promise<AutoVerified> {
  const now = d.clock.now();
  requireOpen(r, now);
  const a = requireAsset(r, idx);
  const candidates = await candidatesFor(d, scope, r, a, now);
  const chosen = verificationId === undefined ? candidates[0] : candidates.find((c) => c.id === verificationId);
  if (!chosen) throw new AppError("no_existing_proof", `no existing proof can complete asset ${idx}`);
  const oldest = oldestAccepted(r);
  if (oldest && chosen.verified_at < oldest) {
    throw new AppError("proof_too_old", `the existing proof was verified more than max_proof_age (${r.max_proof_age} s) before the request was created`);
  }

  const id = newId("verification", now.getTime());
  const ttl = Math.min(DEFAULT_PROOF_TTL_S, Math.floor((chosen.proof_expires_at.getTime() - now.getTime()) / 1000));
  const proof = await d.verifications.issueReusedProof(
    scope,
    {
      id,
      type: chosen.type,
      channel: chosen.channel,
      identifierCanonical: chosen.identifier_canonical,
      externalUserId: r.external_user_id!,
      ttl,
      proofFormat: a.proof_format ?? "jwt",
      holderKey: a.holder_key ?? null,
    },
    now,
  );
  const v: VerificationRow = {
    id,
    tenant_id: scope.tenantId,
    environment: scope.env,
    type: chosen.type,
    channel: chosen.channel,
    identifier: chosen.identifier,
    identifier_canonical: chosen.identifier_canonical,
    status: "verified",
    code_hmac: null,
    challenge_expires_at: now,
    instruction: "Completed with an existing proof.",
    code_lookup: null,
    delivery: null,
    origin: null,
    deep_link: null,
    challenge_message: null,
    attempts: 0,
    max_attempts: MAX_ATTEMPTS,
    client_metadata: r.client_metadata,
    external_user_id: r.external_user_id,
    proof_expires_in: ttl,
    proof_token: proof.token,
    proof_expires_at: proof.expiresAt,
    created_at: now,
    updated_at: now,
    verified_at: proof.verifiedAt ?? now, // the token's (one source of the time)
    revoked_at: null,
    revoked_reason: null,
    resend_count: 0,
    code_sent_at: null,
    method: "reused_proof",
    reused_from: chosen.id,
    callback_url: null,
    proof_format: a.proof_format ?? "jwt",
    holder_key: a.holder_key ?? null,
    proof_identifier_salt: proof.identifierSalt || null,
    proof_sd_jwt_vc: proof.sdJwtVc ?? null,
    suspended_at: null,
    suspended_reason: null,
  };
  let after: RequestView;
  try {
    after = await d.store.attachReused(
      scope,
      r.id,
      idx,
      v,
      (locked, sourceVerified) => {
        if (!locked) throw new AppError("not_found", "verification request not found");
        requireOpen(locked, now);
        requireAsset(locked, idx);
        if (!sourceVerified) throw new AppError("no_existing_proof", `no existing proof can complete asset ${idx}`);
      },
      decide,
      now,
    );
  } catch (e) {
    await d.verifications.withdrawProof(scope, id).catch((err) => d.logger.warn({ err, verification_id: id }, "could not withdraw an unused reused proof"));
    throw e;
  }
  d.logger.info(
    {
      tenant_id: scope.tenantId,
      env: scope.env,
      verification_request_id: r.id,
      asset_index: idx,
      verification_id: id,
      reused_from: chosen.id,
    },
    "asset completed with an existing proof",
  );
  return { request: after, verification: v };
}
