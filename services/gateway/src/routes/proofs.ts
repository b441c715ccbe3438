import { createHash } from "node:crypto";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { iso } from "@icv/platform";
import { scopeOf, type Clients } from "../clients.ts";
import { idParams } from "../input.ts";
import { route, type RouteDef } from "../registry.ts";
import { ErrorBody, Jwks, ProofStatus, RevocationList, RevokeBody, RevokeResponse, RevokedQuery, ValidateBody, ValidateResponse } from "../schemas.ts";

const err = (description: string) => ({ description, schema: ErrorBody });

export function proofRoutes(c: Clients): RouteDef[] {
  return [
    route({
      method: "post",
      path: "/api/v1/proofs/validate",
      tag: "Proofs",
      summary: "Validate a proof token online (any tenant may validate any proof)",
      description: "A failed check is a normal 200 answer with valid false and a reason.",
      auth: "key",
      body: ValidateBody,
      responses: { 200: { description: "The result", schema: ValidateResponse }, 400: err("validation_error") },
      async handler({ body }) {
        const r = await c.verification.validateProof({ proofToken: body.proof_token, identifier: body.identifier });
        return {
          body: r.valid
            ? { valid: true, verification: { id: r.verificationId, type: r.type, channel: r.channel, verified_at: iso(r.verifiedAt), expires_at: iso(r.expiresAt), test_mode: r.testMode } }
            : { valid: false, reason: r.reason, message: r.message },
        };
      },
    }),
    route({
      method: "get",
      path: "/api/v1/proofs/revoked",
      tag: "Proofs",
      summary: "The signed revocation list (public)",
      description: "Entries of unexpired revoked proofs. `signature` is a compact JWS over {revoked, generated_at}, checkable with the JWKS. Cache up to 5 minutes.",
      auth: "public",
      query: RevokedQuery,
      responses: { 200: { description: "The list", schema: RevocationList }, 304: { description: "Not modified (If-None-Match)" } },
      async handler({ req, query }) {
        const r = await c.proof.getRevocationList({ since: query.since ? timestampFromDate(new Date(query.since)) : undefined });
        const revoked = r.revoked.map((e) => ({ proof_id: e.proofId, revoked_at: iso(e.revokedAt), reason: e.reason }));
        const etag = `W/"${createHash("sha256").update(JSON.stringify(revoked)).digest("base64url").slice(0, 27)}"`;
        const headers = { "Cache-Control": "public, max-age=300", ETag: etag };
        if (req.get("if-none-match") === etag) return { status: 304, headers };
        return { headers, body: { revoked, generated_at: iso(r.generatedAt), signature: r.signature } };
      },
    }),
    route({
      method: "get",
      path: "/api/v1/proofs/{id}/status",
      tag: "Proofs",
      summary: "Status of one of your proofs",
      auth: "key",
      params: idParams("verification"),
      responses: { 200: { description: "The proof status", schema: ProofStatus }, 404: err("not_found") },
      async handler({ req, params }) {
        const s = (await c.proof.getProofStatus({ scope: scopeOf(req), proofId: params.id })).status!;
        return {
          body: {
            proof_id: s.proofId,
            status: s.status,
            is_valid: s.isValid,
            is_revoked: s.isRevoked,
            revoked_at: iso(s.revokedAt) ?? null,
            revoked_reason: s.revokedReason ?? null,
            expires_at: iso(s.expiresAt),
            is_expired: s.isExpired,
          },
        };
      },
    }),
    route({
      method: "post",
      path: "/api/v1/proofs/{id}/revoke",
      tag: "Proofs",
      summary: "Revoke a proof (idempotent: a revoked proof answers its original revoked_at)",
      auth: "key",
      params: idParams("verification"),
      body: RevokeBody,
      responses: { 200: { description: "Revoked", schema: RevokeResponse }, 404: err("not_found"), 409: err("invalid_state: not verified") },
      async handler({ req, params, body }) {
        const r = await c.verification.revokeVerification({ scope: scopeOf(req), id: params.id, reason: body.reason });
        return { body: { success: true, verification_id: r.verificationId, status: r.status, revoked_at: iso(r.revokedAt) } };
      },
    }),
    route({
      method: "get",
      path: "/.well-known/jwks.json",
      tag: "Proofs",
      summary: "Public keys for checking proofs offline (select by kid)",
      auth: "public",
      responses: { 200: { description: "The key set; cache up to 24 hours", schema: Jwks } },
      async handler() {
        const r = await c.proof.getJwks({});
        return {
          headers: { "Cache-Control": "public, max-age=86400" },
          body: { keys: r.keys.map((k) => ({ kty: k.kty, n: k.n, e: k.e, alg: k.alg, use: k.use, kid: k.kid })) },
        };
      },
    }),
  ];
}
