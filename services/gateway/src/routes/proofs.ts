import { createHash } from "node:crypto";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { AppError, iso, PROOF_METHODS, REVOKE_REASONS, SUSPEND_REASONS } from "@icv/platform";
import { z } from "zod";
import { parseApiKey } from "../api-keys.ts";
import { scopeOf, type Clients } from "../clients.ts";
import { idParams, timestampParam } from "../input.ts";
import { route, type RouteDef } from "../registry.ts";
import { assetChannel, assetType, ErrorBody, ProofFormat, timestamp } from "../schemas.ts";

/** The longest proof or presentation validate reads: longer is 413 payload_too_large. */
const MAX_PRESENTATION = 8192;

const ValidateBody = z
  .object({
    proof_token: z
      .string()
      .min(1)
      .describe(`The JWT, or an SD-JWT VC presentation (issuer-jwt~disclosure~…~[kb-jwt]); over ${MAX_PRESENTATION} characters is 413 payload_too_large`),
    identifier: z
      .string()
      .min(1)
      .max(320)
      .optional()
      .describe(
        "Checked against the proof: a JWT's salted identifier_hash, or the identifier a presentation discloses (identifier_not_disclosed when it does not)",
      ),
    audience: z.string().min(1).max(512).optional().describe("Holder binding: the aud the holder's key-binding JWT must name (your own identifier)"),
    nonce: z
      .string()
      .min(1)
      .max(512)
      .optional()
      .describe("Holder binding: the fresh nonce you gave the holder; a key-binding JWT is accepted once per credential and nonce"),
  })
  .strict()
  .meta({ id: "ValidateProof", example: { proof_token: "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCIsImtpZCI6ImFlSXJXaEZH…", identifier: "+37069199199" } });

const ValidateResponse = z
  .union([
    z.object({
      valid: z.literal(true),
      verification: z.object({
        id: z.string(),
        type: assetType,
        channel: assetChannel,
        verified_at: timestamp,
        expires_at: timestamp,
        test_mode: z.boolean().describe("A test proof (test key set): the user's control was not checked. Only ever valid for a test key"),
        method: z
          .enum(PROOF_METHODS)
          .optional()
          .describe("How control was shown (the proof's method claim); absent only on proofs issued before every proof carried one"),
        proof_format: ProofFormat.describe("What was presented: the JWT or an SD-JWT VC"),
        identifier: z.string().optional().describe("SD-JWT VC: the identifier, only when the presentation disclosed it"),
        external_user_id: z
          .string()
          .optional()
          .describe("The proof's external_user_id when it has one (an SD-JWT VC: only when the presentation disclosed it)"),
        user_id: z.string().optional().describe("The same as external_user_id, for the reference SDKs"),
        holder_binding: z.boolean().describe("A key-binding JWT signed by the proof's holder key was checked (audience, nonce, iat, sd_hash)"),
      }),
    }),
    z.object({
      valid: z.literal(false),
      reason: z
        .enum([
          "expired",
          "revoked",
          "suspended",
          "invalid_signature",
          "malformed",
          "unknown_key",
          "identifier_mismatch",
          "test_proof",
          "holder_binding_required",
          "holder_binding_invalid",
          "identifier_not_disclosed",
        ])
        .describe(
          "test_proof: a test proof validated with a live key (test proofs never pass for live ones). suspended: control could not be confirmed again. " +
            "holder_binding_required: a holder-bound proof without a key-binding JWT (or without audience and nonce), or binding asked of a proof bound to no key. " +
            "holder_binding_invalid: the key-binding JWT does not verify, or was presented before (a replay). " +
            "identifier_not_disclosed: an identifier was given and the presentation does not disclose one",
        ),
      message: z.string(),
    }),
  ])
  .meta({ id: "ValidateProofResult" });

const ProofStatus = z
  .object({
    proof_id: z.string(),
    status: z.enum(["active", "revoked", "expired", "suspended"]),
    is_valid: z.boolean(),
    is_revoked: z.boolean(),
    revoked_at: timestamp.nullable(),
    revoked_reason: z.enum(REVOKE_REASONS).nullable(),
    expires_at: timestamp,
    is_expired: z.boolean(),
    is_suspended: z.boolean(),
    suspended_at: timestamp.nullable(),
    suspended_reason: z.enum(SUSPEND_REASONS).nullable(),
    log: z
      .object({
        leaf_index: z.number().int().describe("The index of the proof's issuance entry in the transparency log of its environment"),
        checkpoint_size: z.number().int().describe("The size of the latest signed checkpoint, which includes it"),
      })
      .optional()
      .describe("Where the proof is logged (GET /api/v1/proofs/{id}/inclusion proves it); absent until it is, within 5 s of its issuance"),
  })
  .meta({ id: "ProofStatus" });

const RevokeBody = z
  .object({
    reason: z.enum(REVOKE_REASONS).default("other").describe("Default other: a revoke without a body (the reference SDKs send none)"),
  })
  .strict()
  .meta({ id: "RevokeProof" });

const RevokeResponse = z
  .object({
    success: z.literal(true),
    verification_id: z.string(),
    status: z.literal("revoked"),
    revoked_at: timestamp,
    reason: z.enum(REVOKE_REASONS).describe("Why it was revoked (the first revocation's reason when revoked before)"),
  })
  .meta({ id: "RevokeProofResult" });

const RevocationList = z
  .object({
    revoked: z.array(z.object({ proof_id: z.string(), revoked_at: timestamp, reason: z.enum(REVOKE_REASONS) })),
    generated_at: timestamp,
    signature: z.string().describe("Compact JWS (RS256) over {revoked, generated_at}; its kid is in jwks.json (live list) or jwks-test.json (env=test)"),
    count: z.number().int().describe("The number of entries in revoked (for the reference SDKs)"),
    issued_at: timestamp.describe("The same as generated_at (for the reference SDKs)"),
    kid: z.string().nullable().describe("The kid of the key that signed it (in signature's header; for the reference SDKs)"),
  })
  .meta({ id: "RevocationList" });

const BEARER = /^Bearer\s+(\S+)$/i;

/** The kid in a compact JWS's protected header; null when it has none. */
function kidOf(jws: string): string | null {
  try {
    const kid = JSON.parse(Buffer.from(jws.split(".")[0], "base64url").toString("utf8")).kid;
    return typeof kid === "string" ? kid : null;
  } catch {
    return null;
  }
}

const RevokedQuery = z
  .object({
    since: timestampParam.optional(),
    env: z
      .enum(["live", "test"])
      .optional()
      .describe(
        "live (default, unless asked with a test key): live proofs, signed by a key of /.well-known/jwks.json; test (the default with a pk_test_ key): test proofs, signed by a key of /.well-known/jwks-test.json",
      ),
  })
  .strict();

const Jwks = z
  .object({
    keys: z.array(z.object({ kty: z.literal("RSA"), n: z.string(), e: z.string(), alg: z.literal("RS256"), use: z.literal("sig"), kid: z.string() })),
  })
  .meta({ id: "JWKS" });

const err = (description: string) => ({ description, schema: ErrorBody });

export function proofRoutes(c: Clients): RouteDef[] {
  return [
    route({
      method: "post",
      path: "/api/v1/proofs/validate",
      tag: "Proofs",
      summary: "Validate a proof token online (any tenant may validate any live proof)",
      description:
        "A failed check is a normal 200 answer with valid false and a reason. A test proof is valid only for a test key (test_mode true); " +
        "with a live key it answers valid false, reason test_proof. A live proof is valid for either key. verification.method says how control was shown. " +
        "proof_token may be an SD-JWT VC presentation: a valid answer shows only what it disclosed. Give audience and nonce to ask for holder binding: " +
        "a holder-bound proof is valid only as a presentation with a key-binding JWT over them, and only once per nonce.",
      auth: "key",
      body: ValidateBody,
      responses: {
        200: { description: "The result", schema: ValidateResponse },
        400: err("validation_error"),
        413: err(`payload_too_large: a proof_token over ${MAX_PRESENTATION} characters`),
      },
      async handler({ req, body }) {
        if (body.proof_token.length > MAX_PRESENTATION) throw new AppError("payload_too_large", `proof_token is over ${MAX_PRESENTATION} characters`);
        const r = await c.verification.validateProof({
          proofToken: body.proof_token,
          identifier: body.identifier,
          audience: body.audience,
          nonce: body.nonce,
          scope: scopeOf(req),
        });
        return {
          body: r.valid
            ? {
                valid: true,
                verification: {
                  id: r.verificationId,
                  type: r.type,
                  channel: r.channel,
                  verified_at: iso(r.verifiedAt),
                  expires_at: iso(r.expiresAt),
                  test_mode: r.testMode,
                  ...(r.method ? { method: r.method } : {}),
                  proof_format: (r.proofFormat || "jwt") as "jwt" | "sd-jwt-vc",
                  ...(r.identifier !== undefined ? { identifier: r.identifier } : {}),
                  ...(r.externalUserId !== undefined ? { external_user_id: r.externalUserId, user_id: r.externalUserId } : {}),
                  holder_binding: r.holderBinding,
                },
              }
            : { valid: false, reason: r.reason, message: r.message },
        };
      },
    }),
    route({
      method: "get",
      path: "/api/v1/proofs/revoked",
      tag: "Proofs",
      summary: "The signed revocation list (public), of live proofs or, with env=test, of test proofs",
      description:
        "Entries of unexpired revoked proofs of one environment. `signature` is a compact JWS over {revoked, generated_at}, checkable with " +
        "/.well-known/jwks.json (live list) or /.well-known/jwks-test.json (env=test: signed by a test key). Cache up to 5 minutes.",
      auth: "public",
      query: RevokedQuery,
      responses: { 200: { description: "The list", schema: RevocationList }, 304: { description: "Not modified (If-None-Match)" } },
      async handler({ req, query }) {
        // the reference SDKs ask with their key and expect a test key to get the test list; both lists are
        // public, so the key's prefix is enough to choose (it is not checked: it grants nothing)
        const env = query.env ?? (parseApiKey(BEARER.exec(req.get("authorization") ?? "")?.[1] ?? "") === "test" ? "test" : "live");
        const r = await c.proof.getRevocationList({
          since: query.since ? timestampFromDate(new Date(query.since)) : undefined,
          environment: env === "test" ? Environment.TEST : Environment.LIVE,
        });
        const revoked = r.revoked.map((e) => ({ proof_id: e.proofId, revoked_at: iso(e.revokedAt), reason: e.reason }));
        const etag = `W/"${createHash("sha256")
          .update(`${env}:${JSON.stringify(revoked)}`)
          .digest("base64url")
          .slice(0, 27)}"`;
        const headers = { "Cache-Control": "public, max-age=300", ETag: etag, Vary: "Authorization" };
        if (req.get("if-none-match") === etag) return { status: 304, headers };
        const generatedAt = iso(r.generatedAt);
        const body = { revoked, generated_at: generatedAt, signature: r.signature, count: revoked.length, issued_at: generatedAt, kid: kidOf(r.signature) };
        return { headers, body };
      },
    }),
    route({
      method: "get",
      path: "/api/v1/proofs/{id}/status",
      tag: "Proofs",
      summary: "Status of one of your proofs",
      description:
        "Whether one of your tenant's proofs is valid now, revoked (when and why), suspended or expired; another tenant's proof is not_found. To check any proof, use validate or the revocation list.",
      auth: "key",
      params: idParams("verification"),
      responses: { 200: { description: "The proof status", schema: ProofStatus }, 404: err("not_found") },
      async handler({ req, params }) {
        const scope = scopeOf(req);
        // the log answers beside the proof service; a log that is away leaves the position out
        const [{ status }, logged] = await Promise.all([
          c.proof.getProofStatus({ scope, proofId: params.id }),
          c.log.getProofPositions({ environment: scope.environment, proofIds: [params.id] }).then(
            (r) => r.positions[0],
            () => undefined,
          ),
        ]);
        const s = status!;
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
            is_suspended: s.isSuspended,
            suspended_at: iso(s.suspendedAt) ?? null,
            suspended_reason: s.suspendedReason ?? null,
            ...(logged ? { log: { leaf_index: Number(logged.leafIndex), checkpoint_size: Number(logged.checkpointSize) } } : {}),
          },
        };
      },
    }),
    route({
      method: "post",
      path: "/api/v1/proofs/{id}/revoke",
      tag: "Proofs",
      summary: "Revoke a proof (idempotent: a revoked proof answers its original revoked_at)",
      description:
        "Revokes the proof of a verified verification with a reason (user_request, fraud, key_compromise, asset_transferred, other; without a body: other). Validation answers revoked at once, the revocation list and status list carry it, and the verification becomes revoked (webhook and SSE).",
      auth: "key",
      params: idParams("verification"),
      body: RevokeBody,
      responses: {
        200: { description: "Revoked", schema: RevokeResponse },
        404: err("not_found"),
        409: err("invalid_state: not verified"),
      },
      async handler({ req, params, body }) {
        const r = await c.verification.revokeVerification({ scope: scopeOf(req), id: params.id, reason: body.reason });
        return { body: { success: true, verification_id: r.verificationId, status: r.status, revoked_at: iso(r.revokedAt), reason: r.reason } };
      },
    }),
    jwksRoute(c, "/.well-known/jwks.json", Environment.LIVE, "Public keys for checking live proofs offline (select by kid); never holds a test key"),
    jwksRoute(
      c,
      "/.well-known/jwks-test.json",
      Environment.TEST,
      "Public keys of test proofs only (select by kid); a proof that verifies only here is a test proof",
    ),
  ];
}

/** One key set's JWKS (public, cached a day): the live set or the test set, never both in one document. */
function jwksRoute(c: Clients, path: string, environment: Environment, summary: string): RouteDef {
  return route({
    method: "get",
    path,
    tag: "Proofs",
    summary,
    description:
      "A JSON Web Key Set (RS256 public keys, selected by the token's kid) for checking proofs offline. Retired keys stay listed while proofs they signed are unexpired; cache it up to 24 hours and fetch again on an unknown kid.",
    auth: "public",
    responses: { 200: { description: "The key set; cache up to 24 hours", schema: Jwks } },
    async handler() {
      const r = await c.proof.getJwks({ environment });
      return {
        headers: { "Cache-Control": "public, max-age=86400" },
        body: { keys: r.keys.map((k) => ({ kty: k.kty, n: k.n, e: k.e, alg: k.alg, use: k.use, kid: k.kid })) },
      };
    },
  });
}
