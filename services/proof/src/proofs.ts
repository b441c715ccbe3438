/** The proof use cases: issue, validate, status, revoke. Plain functions over the stores, the key ring and the clock. */
import { AppError, PROOF_METHODS, proofsIssued, type Clock, type ProofMethod, type Scope } from "@icv/platform";
import type { KeyRing } from "./keyring.ts";
import type { ProofRow, ProofStore } from "./store/proofs.ts";
import { PROOF_SCHEMA_VERSION, signProof, verifyProof, invalid, type InvalidReason, type ProofClaims, type VerifiedTokens } from "./tokens.ts";

export const REVOKE_REASONS = ["user_request", "fraud", "key_compromise", "asset_transferred", "other"] as const;
const MIN_TTL_S = 60;
const MAX_TTL_S = 31_536_000;
const DEFAULT_TTL_S = 2_592_000;
/** The most proof ids one GetProofStatuses call may ask about (a profile lists at most 50). */
export const MAX_STATUS_BATCH = 100;

export interface ProofDeps {
  store: ProofStore;
  keys: KeyRing;
  clock: Clock;
  issuer: string;
  /** Tokens whose signature was checked once (validate does not verify the same RS256 token again). */
  verified: VerifiedTokens;
}

export interface IssueInput {
  proofId: string;
  type: string;
  channel: string;
  identifierHash: string;
  externalUserId?: string;
  verifiedAt?: Date;
  expiresInSeconds: number;
  method: string;
  subjectHash?: string;
}

export interface Issued {
  token: string;
  expiresAt: Date;
  kid: string;
}

/** Signs and stores a proof; idempotent by proof id (a retry, or a concurrent issue, answers the stored proof). */
export async function issueProof(d: ProofDeps, scope: Scope, req: IssueInput): Promise<Issued> {
  if (!req.proofId || !req.type || !req.channel || !/^[0-9a-f]{64}$/.test(req.identifierHash)) {
    throw new AppError("validation_error", "proof_id, type, channel and a hex SHA-256 identifier_hash are required");
  }
  const method = req.method;
  if (!(PROOF_METHODS as readonly string[]).includes(method)) throw new AppError("validation_error", `method must be one of ${PROOF_METHODS.join(", ")}`);
  if (req.subjectHash !== undefined && !/^[0-9a-f]{64}$/.test(req.subjectHash)) throw new AppError("validation_error", "subject_hash must be a hex SHA-256");
  const ttl = req.expiresInSeconds || DEFAULT_TTL_S;
  if (ttl < MIN_TTL_S || ttl > MAX_TTL_S) throw new AppError("validation_error", `expires_in must be between ${MIN_TTL_S} and ${MAX_TTL_S} seconds`);
  const now = d.clock.now();
  const verifiedAt = req.verifiedAt ?? now;
  const iat = Math.floor(now.getTime() / 1000);
  const exp = iat + ttl;
  // test proofs are signed by the test set, live ones by the live set: never across
  const key = await d.keys.signingKey(scope.env);
  const token = await signProof(key, {
    iss: d.issuer,
    sub: req.proofId,
    jti: req.proofId,
    iat,
    exp,
    proof_schema_version: PROOF_SCHEMA_VERSION,
    tenant_id: scope.tenantId,
    env: scope.env,
    type: req.type,
    channel: req.channel,
    identifier_hash: req.identifierHash,
    verified_at: verifiedAt.toISOString(),
    ...(req.externalUserId ? { external_user_id: req.externalUserId } : {}),
    method: method as ProofMethod,
    ...(req.subjectHash ? { subject_hash: req.subjectHash } : {}),
  });
  const expiresAt = new Date(exp * 1000);
  const inserted = await d.store.insertProof({
    id: req.proofId,
    scope,
    kid: key.kid,
    type: req.type,
    channel: req.channel,
    identifierHash: req.identifierHash,
    externalUserId: req.externalUserId,
    method,
    token,
    verifiedAt,
    issuedAt: now,
    expiresAt,
  });
  proofsIssued.inc({ method });
  if (!inserted) {
    // issued before (a retry) or concurrently: the stored proof is the answer
    const existing = await d.store.proof(req.proofId);
    if (!existing) throw new AppError("internal_error", "proof vanished");
    if (existing.tenant_id !== scope.tenantId || existing.environment !== scope.env) throw new AppError("invalid_state", "proof id already used");
    return { token: existing.token, expiresAt: existing.expires_at, kid: existing.kid };
  }
  return { token, expiresAt, kid: key.kid };
}

export type Validation = { valid: true; claims: ProofClaims; testMode: boolean } | { valid: false; reason: InvalidReason; message: string };

/**
 * A proof is a test proof when anything about it says test: the set of the key that signed it
 * (a test key only ever signs test proofs), its `env` claim (test proofs signed by a live key
 * before the sets were split), or its stored row. A test proof is never valid for a live
 * caller (test_proof); a live proof is valid for either (proofs are portable).
 */
export async function validateProof(d: ProofDeps, caller: Scope, token: string): Promise<Validation> {
  const v = await verifyProof(token, d.issuer, (kid) => d.keys.verificationKey(kid), d.clock.now(), d.verified);
  if (!v.valid) return v;
  const state = await d.store.revocationState(v.claims.sub);
  if (!state) return invalid("unknown_key") as Validation;
  const isTest = v.keyEnv === "test" || v.claims.env !== "live" || state.environment !== "live";
  if (isTest && caller.env === "live") return invalid("test_proof") as Validation;
  if (state.revoked_at) return invalid("revoked") as Validation;
  return { valid: true, claims: v.claims, testMode: isTest };
}

/** One proof of the caller's scope (another scope's is not_found). */
export async function proofOf(d: ProofDeps, scope: Scope, id: string): Promise<ProofRow> {
  const p = await d.store.scopedProof(scope, id);
  if (!p) throw new AppError("not_found", "proof not found");
  return p;
}

/** The proofs of one scope among ids (at most MAX_STATUS_BATCH; unknown and other scopes' left out). */
export function proofsOf(d: ProofDeps, scope: Scope, ids: string[]): Promise<ProofRow[]> {
  if (ids.length > MAX_STATUS_BATCH) throw new AppError("validation_error", `at most ${MAX_STATUS_BATCH} proof ids at once`);
  return d.store.scopedProofs(scope, [...new Set(ids)]);
}

/** Revokes once (idempotent: a revoked proof answers its original revocation). */
export async function revokeProof(d: ProofDeps, scope: Scope, id: string, reason: string): Promise<ProofRow & { revoked_at: Date }> {
  if (!(REVOKE_REASONS as readonly string[]).includes(reason)) {
    throw new AppError("validation_error", `reason must be one of ${REVOKE_REASONS.join(", ")}`);
  }
  const p = await d.store.revoke(scope, id, reason, d.clock.now());
  if (!p?.revoked_at) throw new AppError("not_found", "proof not found");
  return p as ProofRow & { revoked_at: Date };
}
