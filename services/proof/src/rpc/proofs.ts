import type { ConnectRouter } from "@connectrpc/connect";
import { ProofService } from "@icv/contracts/gen/icv/proof/v1/proof_service_pb.ts";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { requireScope, toDate, toEnvironment, ts } from "@icv/platform";
import type { KeyEnv } from "../keys.ts";
import { issueProof, proofOf, proofsOf, reinstateProof, revokeProof, suspendProof, type ProofDeps } from "../proofs.ts";
import type { RevocationLists } from "../revocation-list.ts";
import { validateProof } from "../validation.ts";
import { fromFormat, toFormat, toStatus } from "./convert.ts";

/** The key set a public call asks for: test only when it says so (UNSPECIFIED is live, the old default). */
const setOf = (e: Environment): KeyEnv => (e === Environment.TEST ? "test" : "live");

/** The ProofService handlers: thin, they call the use cases (proofs.ts, validation.ts) and convert their answers. */
export function proofRoutes(d: ProofDeps, revocationLists: RevocationLists) {
  return (router: ConnectRouter) =>
    router.service(ProofService, {
      async issueProof(req) {
        const r = await issueProof(d, requireScope(req.scope), {
          proofId: req.proofId,
          type: req.type,
          channel: req.channel,
          identifier: req.identifier,
          externalUserId: req.externalUserId,
          verifiedAt: toDate(req.verifiedAt),
          expiresInSeconds: req.expiresInSeconds,
          method: req.method,
          subjectHash: req.subjectHash,
          format: fromFormat(req.format),
          holderKey: req.holderKey,
        });
        return { token: r.token, expiresAt: ts(r.expiresAt), verifiedAt: ts(r.verifiedAt), kid: r.kid, identifierSalt: r.identifierSalt, sdJwtVc: r.sdJwtVc };
      },

      async validateProof(req) {
        const v = await validateProof(d, requireScope(req.scope), req.proofToken, { audience: req.audience, nonce: req.nonce });
        if (!v.valid) return { valid: false, reason: v.reason, message: v.message };
        const c = v.claims;
        return {
          valid: true,
          proofId: c.sub,
          type: c.type,
          channel: c.channel,
          identifierHash: c.identifier_hash ?? "",
          // an SD-JWT VC has no verified_at claim: it was issued when control was shown
          verifiedAt: ts(c.verified_at ? new Date(c.verified_at) : new Date(c.iat * 1000)),
          expiresAt: ts(new Date(c.exp * 1000)),
          testMode: v.testMode,
          method: c.method ?? "",
          identifierSalt: v.identifierSalt,
          format: toFormat(v.format),
          disclosedIdentifier: v.disclosed.identifier,
          disclosedExternalUserId: v.disclosed.external_user_id,
          holderBound: v.holderBound,
        };
      },

      async getProofStatus(req) {
        const p = await proofOf(d, requireScope(req.scope), req.proofId);
        return { status: toStatus(p, d.clock.now()) };
      },

      async getProofStatuses(req) {
        const rows = await proofsOf(d, requireScope(req.scope), req.proofIds);
        const now = d.clock.now();
        return { statuses: rows.map((p) => toStatus(p, now)) };
      },

      async revokeProof(req) {
        const p = await revokeProof(d, requireScope(req.scope), req.proofId, req.reason);
        revocationLists.drop();
        return { proofId: p.id, revokedAt: ts(p.revoked_at), reason: p.revoked_reason ?? req.reason };
      },

      async suspendProof(req) {
        const p = await suspendProof(d, requireScope(req.scope), req.proofId, req.reason);
        return { status: toStatus(p, d.clock.now()) };
      },

      async reinstateProof(req) {
        const p = await reinstateProof(d, requireScope(req.scope), req.proofId);
        return { status: toStatus(p, d.clock.now()) };
      },

      async getStatusList(req) {
        return { jwt: await d.lists.jwt(req.listId) };
      },

      async getRevocationList(req) {
        const r = await revocationLists.get(setOf(req.environment), toDate(req.since));
        return {
          revoked: r.revoked.map((e) => ({ proofId: e.id, revokedAt: ts(e.revoked_at), reason: e.revoked_reason })),
          generatedAt: ts(r.generatedAt),
          signature: r.signature,
        };
      },

      async getJwks(req) {
        return { keys: await d.keys.jwks(setOf(req.environment), d.clock.now()) };
      },

      async rotateSigningKey(req) {
        const env = setOf(req.environment);
        const r = await d.keys.rotate(env, d.clock.now());
        revocationLists.drop();
        return { kid: r.kid, retiredKid: r.retiredKid ?? "", environment: toEnvironment(env) };
      },
    });
}
