/** The proof use cases: issue, status, revoke, suspend, reinstate. Plain functions over the stores, the key ring and the clock. */
import {
  AppError,
  checkHolderKey,
  PROOF_METHODS,
  proofsIssued,
  REVOKE_REASONS,
  SUSPEND_REASONS,
  type Clock,
  type HolderKey,
  type ProofMethod,
  type Scope,
} from "@icv/platform";
import { issueCredential, vcIssuer, VCT_PATH } from "./credentials.ts";
import { identifierHash, logSubject, newIdentifierSalt } from "./identifiers.ts";
import type { KeyRing } from "./keyring.ts";
import type { StatusIndexes, StatusLists } from "./status-lists.ts";
import type { ProofRow, ProofStore } from "./store/proofs.ts";
import { PROOF_SCHEMA_VERSION, signProof, type VerifiedTokens } from "./tokens.ts";

// why a proof is revoked, and suspended (DECISIONS.md, Current control: what a re-check of the asset found): @icv/platform's vocabulary
export { REVOKE_REASONS, SUSPEND_REASONS };
export const PROOF_FORMATS = ["jwt", "sd-jwt-vc"] as const;
export type ProofFormat = (typeof PROOF_FORMATS)[number];
const MIN_TTL_S = 60;
const MAX_TTL_S = 31_536_000;
const DEFAULT_TTL_S = 2_592_000;
const MAX_IDENTIFIER_LENGTH = 2048;
/** The most proof ids one GetProofStatuses call may ask about (a profile lists at most 50). */
export const MAX_STATUS_BATCH = 100;

export interface ProofDeps {
  store: ProofStore;
  keys: KeyRing;
  clock: Clock;
  issuer: string;
  publicBaseUrl: string;
  indexes: StatusIndexes;
  lists: StatusLists;
  /** JWTs whose signature was checked once (validate does not verify the same RS256 token again). */
  verified: VerifiedTokens;
  /** The same for the issuer-signed JWTs of SD-JWT VCs (a cache of their own: the two kinds never mix). */
  verifiedCredentials: VerifiedTokens;
}

export interface IssueInput {
  proofId: string;
  type: string;
  channel: string;
  identifier: string;
  externalUserId?: string;
  verifiedAt?: Date;
  expiresInSeconds: number;
  method: string;
  subjectHash?: string;
  format: ProofFormat;
  holderKey?: unknown;
}

export interface Issued {
  token: string;
  expiresAt: Date;
  /** The token's verified_at (the stored proof's on a retry). */
  verifiedAt: Date;
  kid: string;
  identifierSalt: string;
  sdJwtVc?: string;
}

function checkIssue(req: IssueInput): { ttl: number; holderKey?: HolderKey } {
  if (!req.proofId || !req.type || !req.channel) throw new AppError("validation_error", "proof_id, type and channel are required");
  if (!req.identifier || req.identifier.length > MAX_IDENTIFIER_LENGTH)
    throw new AppError("validation_error", "identifier (the normalized identifier) is required");
  if (!(PROOF_METHODS as readonly string[]).includes(req.method)) throw new AppError("validation_error", `method must be one of ${PROOF_METHODS.join(", ")}`);
  if (req.subjectHash !== undefined && !/^[0-9a-f]{64}$/.test(req.subjectHash)) throw new AppError("validation_error", "subject_hash must be a hex SHA-256");
  const ttl = req.expiresInSeconds || DEFAULT_TTL_S;
  if (ttl < MIN_TTL_S || ttl > MAX_TTL_S) throw new AppError("validation_error", `expires_in must be between ${MIN_TTL_S} and ${MAX_TTL_S} seconds`);
  return { ttl, holderKey: req.holderKey === undefined ? undefined : checkHolderKey(req.holderKey) };
}

/**
 * Signs and stores a proof: the RS256 JWT always, the SD-JWT VC beside it when asked. Each gets a
 * fresh identifier salt and a fresh status-list index. Idempotent by proof id: a retry, or a
 * concurrent issue, answers the proof stored first.
 */
export async function issueProof(d: ProofDeps, scope: Scope, req: IssueInput): Promise<Issued> {
  const { ttl, holderKey } = checkIssue(req);
  const now = d.clock.now();
  const verifiedAt = req.verifiedAt ?? now;
  const iat = Math.floor(now.getTime() / 1000);
  const exp = iat + ttl;
  const salt = newIdentifierSalt();
  const hash = identifierHash(salt, req.identifier);
  const at = await d.indexes.next(scope.env);
  const status = d.lists.claim(scope.env, at);
  const cnf = holderKey ? { cnf: { jwk: holderKey } } : {};
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
    identifier_hash: hash,
    verified_at: verifiedAt.toISOString(),
    // user_id: the reference SDKs' name of external_user_id (DECISIONS.md "Proofs")
    ...(req.externalUserId ? { external_user_id: req.externalUserId, user_id: req.externalUserId } : {}),
    method: req.method as ProofMethod,
    ...(req.subjectHash ? { subject_hash: req.subjectHash } : {}),
    status,
    ...cnf,
  });
  const sdJwtVc =
    req.format === "sd-jwt-vc"
      ? await issueCredential(key, {
          iss: vcIssuer(d.issuer, scope.env),
          iat,
          exp,
          sub: req.proofId,
          vct: `${d.publicBaseUrl}${VCT_PATH}`,
          status,
          ...cnf,
          type: req.type,
          channel: req.channel,
          method: req.method,
          env: scope.env,
          identifier: req.identifier,
          ...(req.externalUserId ? { external_user_id: req.externalUserId } : {}),
        })
      : undefined;
  const expiresAt = new Date(exp * 1000);
  const inserted = await d.store.insertProof({
    id: req.proofId,
    scope,
    kid: key.kid,
    type: req.type,
    channel: req.channel,
    identifierHash: hash,
    identifierSalt: salt,
    subject: logSubject(req.type, req.identifier, hash),
    externalUserId: req.externalUserId,
    method: req.method,
    token,
    sdJwtVc,
    holderKey,
    statusList: at.list,
    statusIdx: at.idx,
    verifiedAt,
    issuedAt: now,
    expiresAt,
  });
  proofsIssued.inc({ method: req.method });
  if (!inserted) {
    // issued before (a retry) or concurrently: the stored proof is the answer
    const existing = await d.store.proof(req.proofId);
    if (!existing) throw new AppError("internal_error", "proof vanished");
    if (existing.tenant_id !== scope.tenantId || existing.environment !== scope.env) throw new AppError("invalid_state", "proof id already used");
    return {
      token: existing.token,
      expiresAt: existing.expires_at,
      verifiedAt: existing.verified_at,
      kid: existing.kid,
      identifierSalt: existing.identifier_salt ?? "",
      sdJwtVc: existing.sd_jwt_vc ?? undefined,
    };
  }
  return { token, expiresAt, verifiedAt, kid: key.kid, identifierSalt: salt, sdJwtVc };
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

/** Revokes once (idempotent: a revoked proof answers its original revocation); a suspended proof may be revoked. */
export async function revokeProof(d: ProofDeps, scope: Scope, id: string, reason: string): Promise<ProofRow & { revoked_at: Date }> {
  if (!(REVOKE_REASONS as readonly string[]).includes(reason)) {
    throw new AppError("validation_error", `reason must be one of ${REVOKE_REASONS.join(", ")}`);
  }
  const p = await d.store.revoke(scope, id, reason, d.clock.now());
  if (!p?.revoked_at) throw new AppError("not_found", "proof not found");
  if (p.status_list !== null) d.lists.changed(scope.env, p.status_list);
  return p as ProofRow & { revoked_at: Date };
}

/** Suspends a valid proof (idempotent: a suspended proof answers its original suspension). Revoked or expired: invalid_state. */
export async function suspendProof(d: ProofDeps, scope: Scope, id: string, reason: string): Promise<ProofRow> {
  if (!(SUSPEND_REASONS as readonly string[]).includes(reason)) {
    throw new AppError("validation_error", `reason must be one of ${SUSPEND_REASONS.join(", ")}`);
  }
  const now = d.clock.now();
  const p = await d.store.suspend(scope, id, reason, now);
  if (!p) throw new AppError("not_found", "proof not found");
  if (p.revoked_at) throw new AppError("invalid_state", "a revoked proof cannot be suspended (revocation is final)");
  if (!p.suspended_at) throw new AppError("invalid_state", "an expired proof cannot be suspended");
  if (p.status_list !== null) d.lists.changed(scope.env, p.status_list);
  return p;
}

/** Ends a suspension (idempotent: a proof that is not suspended answers as it is). Revoked: invalid_state. */
export async function reinstateProof(d: ProofDeps, scope: Scope, id: string): Promise<ProofRow> {
  const p = await d.store.reinstate(scope, id, d.clock.now());
  if (!p) throw new AppError("not_found", "proof not found");
  if (p.revoked_at) throw new AppError("invalid_state", "a revoked proof cannot be reinstated (revocation is final)");
  if (p.status_list !== null) d.lists.changed(scope.env, p.status_list);
  return p;
}
