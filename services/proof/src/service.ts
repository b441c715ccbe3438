import type { ConnectRouter } from "@connectrpc/connect";
import { ProofService } from "@icv/contracts/gen/icv/proof/v1/proof_service_pb.ts";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { AppError, PROOF_METHODS, proofsIssued, requireScope, toDate, toEnvironment, ts, type Clock, type ProofMethod } from "@icv/platform";
import type { KeyEnv } from "./keys.ts";
import type { KeyRing } from "./keyring.ts";
import type { ProofRow, ProofStore } from "./store.ts";
import { PROOF_SCHEMA_VERSION, signDocument, signProof, verifyProof, invalid, VerifiedTokens } from "./tokens.ts";

export const REVOKE_REASONS = ["user_request", "fraud", "key_compromise", "asset_transferred", "other"] as const;
const MIN_TTL_S = 60;
const MAX_TTL_S = 31_536_000;
const REVOCATION_CACHE_MS = 5_000;
/** The most proof ids one GetProofStatuses call may ask about (a profile lists at most 50). */
const MAX_STATUS_BATCH = 100;

/** The key set a public call asks for: test only when it says so (UNSPECIFIED is live, the old default). */
const setOf = (e: Environment): KeyEnv => (e === Environment.TEST ? "test" : "live");

export interface ProofServiceDeps {
  store: ProofStore;
  keys: KeyRing;
  clock: Clock;
  issuer: string;
}

const statusOf = (p: ProofRow, now: Date) => {
  const isRevoked = p.revoked_at !== null;
  const isExpired = p.expires_at <= now;
  return {
    proofId: p.id,
    status: isRevoked ? "revoked" : isExpired ? "expired" : "active",
    isValid: !isRevoked && !isExpired,
    isRevoked,
    revokedAt: ts(p.revoked_at),
    revokedReason: p.revoked_reason ?? undefined,
    expiresAt: ts(p.expires_at),
    isExpired,
  };
};

export function proofRoutes(deps: ProofServiceDeps) {
  const { store, keys, clock, issuer } = deps;
  let revocationCache = new Map<string, { at: number; value: Awaited<ReturnType<typeof buildRevocationList>> }>();
  // a token validated again is not verified again (RS256): only its expiry and revocation are checked
  const verified = new VerifiedTokens();

  /** One environment's list, signed by that environment's key (a test list is never signed by a live key). */
  async function buildRevocationList(env: KeyEnv, since: Date | undefined) {
    const now = clock.now();
    const rows = await store.revokedSince(env, since, now);
    const revoked = rows.map((r) => ({ proof_id: r.id, revoked_at: r.revoked_at.toISOString(), reason: r.revoked_reason }));
    const generatedAt = now.toISOString();
    const signature = await signDocument(await keys.signingKey(env), { revoked, generated_at: generatedAt });
    return {
      revoked: rows.map((r) => ({ proofId: r.id, revokedAt: ts(r.revoked_at), reason: r.revoked_reason })),
      generatedAt: ts(now),
      signature,
    };
  }

  return (router: ConnectRouter) =>
    router.service(ProofService, {
      async issueProof(req) {
        const scope = requireScope(req.scope);
        if (!req.proofId || !req.type || !req.channel || !/^[0-9a-f]{64}$/.test(req.identifierHash)) {
          throw new AppError("validation_error", "proof_id, type, channel and a hex SHA-256 identifier_hash are required");
        }
        const method = req.method;
        if (!(PROOF_METHODS as readonly string[]).includes(method)) throw new AppError("validation_error", `method must be one of ${PROOF_METHODS.join(", ")}`);
        if (req.subjectHash !== undefined && !/^[0-9a-f]{64}$/.test(req.subjectHash))
          throw new AppError("validation_error", "subject_hash must be a hex SHA-256");
        const ttl = req.expiresInSeconds || 2_592_000;
        if (ttl < MIN_TTL_S || ttl > MAX_TTL_S) throw new AppError("validation_error", `expires_in must be between ${MIN_TTL_S} and ${MAX_TTL_S} seconds`);
        const now = clock.now();
        const verifiedAt = toDate(req.verifiedAt) ?? now;
        const iat = Math.floor(now.getTime() / 1000);
        const exp = iat + ttl;
        // test proofs are signed by the test set, live ones by the live set: never across
        const key = await keys.signingKey(scope.env);
        const token = await signProof(key, {
          iss: issuer,
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
        const inserted = await store.insertProof({
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
          const existing = await store.proof(req.proofId);
          if (!existing) throw new AppError("internal_error", "proof vanished");
          if (existing.tenant_id !== scope.tenantId || existing.environment !== scope.env) throw new AppError("invalid_state", "proof id already used");
          return { token: existing.token, expiresAt: ts(existing.expires_at), kid: existing.kid };
        }
        return { token, expiresAt: ts(expiresAt), kid: key.kid };
      },

      /**
       * A proof is a test proof when anything about it says test: the set of the key that signed it
       * (a test key only ever signs test proofs), its `env` claim (test proofs signed by a live key
       * before the sets were split), or its stored row. A test proof is never valid for a live
       * caller (test_proof); a live proof is valid for either (proofs are portable).
       */
      async validateProof(req) {
        const caller = requireScope(req.scope);
        const now = clock.now();
        const v = await verifyProof(req.proofToken, issuer, (kid) => keys.verificationKey(kid), now, verified);
        if (!v.valid) return { valid: false, reason: v.reason, message: v.message };
        const state = await store.revocationState(v.claims.sub);
        if (!state) return { ...invalid("unknown_key"), valid: false };
        const isTest = v.keyEnv === "test" || v.claims.env !== "live" || state.environment !== "live";
        if (isTest && caller.env === "live") return { ...invalid("test_proof"), valid: false };
        if (state.revoked_at) return { ...invalid("revoked"), valid: false };
        return {
          valid: true,
          proofId: v.claims.sub,
          type: v.claims.type,
          channel: v.claims.channel,
          identifierHash: v.claims.identifier_hash,
          verifiedAt: ts(new Date(v.claims.verified_at)),
          expiresAt: ts(new Date(v.claims.exp * 1000)),
          testMode: isTest,
          method: v.claims.method ?? "",
        };
      },

      async getProofStatus(req) {
        const scope = requireScope(req.scope);
        const p = await store.scopedProof(scope, req.proofId);
        if (!p) throw new AppError("not_found", "proof not found");
        return { status: statusOf(p, clock.now()) };
      },

      async getProofStatuses(req) {
        const scope = requireScope(req.scope);
        if (req.proofIds.length > MAX_STATUS_BATCH) throw new AppError("validation_error", `at most ${MAX_STATUS_BATCH} proof ids at once`);
        const now = clock.now();
        return { statuses: (await store.scopedProofs(scope, [...new Set(req.proofIds)])).map((p) => statusOf(p, now)) };
      },

      async revokeProof(req) {
        const scope = requireScope(req.scope);
        if (!(REVOKE_REASONS as readonly string[]).includes(req.reason)) {
          throw new AppError("validation_error", `reason must be one of ${REVOKE_REASONS.join(", ")}`);
        }
        const p = await store.revoke(scope, req.proofId, req.reason, clock.now());
        if (!p?.revoked_at) throw new AppError("not_found", "proof not found");
        revocationCache = new Map();
        return { proofId: p.id, revokedAt: ts(p.revoked_at), reason: p.revoked_reason ?? req.reason };
      },

      async getRevocationList(req) {
        const env = setOf(req.environment);
        const since = toDate(req.since);
        const cacheKey = `${env}:${since?.toISOString() ?? ""}`;
        const hit = revocationCache.get(cacheKey);
        if (hit && Date.now() - hit.at < REVOCATION_CACHE_MS) return hit.value;
        const value = await buildRevocationList(env, since);
        if (revocationCache.size > 100) revocationCache = new Map();
        revocationCache.set(cacheKey, { at: Date.now(), value });
        return value;
      },

      async getJwks(req) {
        return { keys: await keys.jwks(setOf(req.environment), clock.now()) };
      },

      async rotateSigningKey(req) {
        const env = setOf(req.environment);
        const r = await keys.rotate(env, clock.now());
        revocationCache = new Map();
        return { kid: r.kid, retiredKid: r.retiredKid ?? "", environment: toEnvironment(env) };
      },
    });
}
