import type { Client } from "@connectrpc/connect";
import { z } from "zod";
import type { VerificationRequestService } from "@icv/contracts/gen/icv/verification/v1/verification_request_service_pb.ts";
import { AppError, iso, type Config } from "@icv/platform";
import { idParams } from "../input.ts";
import { route, type RouteDef } from "../registry.ts";
import { assetChannel, assetType, ErrorBody, REQUEST_ASSET_STATUSES, REQUEST_STATUSES } from "../schemas.ts";

const err = (description: string) => ({ description, schema: ErrorBody });
const TAG = "Smart reuse";
/** The hosted page's request token travels in this header (never in the URL: it would reach logs). */
export const REQUEST_TOKEN_HEADER = "x-request-token";

const ReusableProof = z
  .object({
    asset_index: z.number().int(),
    verification_id: z.string().describe("The existing verification whose proof can be reused"),
    type: assetType,
    channel: assetChannel,
    identifier: z.string().describe("Masked"),
    verified_at: z.string(),
    proof_expires_at: z.string(),
  })
  .meta({ id: "ReusableProof" });

const ReusableProofList = z.object({ request_id: z.string(), proofs: z.array(ReusableProof) }).meta({ id: "ReusableProofList" });

const AssetParams = idParams("verificationRequest").extend({ assetIndex: z.coerce.number().int().min(0).max(99) });

const AutoVerifyBody = z
  .object({
    verification_id: z.string().min(1).max(64).optional().describe("Which offered proof to reuse; default the most recently verified one"),
  })
  .strict()
  .meta({ id: "AutoVerifyAsset" });

const AutoVerifyResult = z
  .object({
    success: z.literal(true),
    request_id: z.string(),
    request_status: z.enum(REQUEST_STATUSES).describe("The request's status after this asset (completed when it was the last required one)"),
    asset: z.object({ index: z.number().int(), status: z.enum(REQUEST_ASSET_STATUSES), verification_id: z.string() }),
    verification: z.object({
      id: z.string().describe("The new verification"),
      method: z.literal("reused_proof"),
      reused_from: z.string(),
      type: assetType,
      channel: assetChannel,
      identifier: z.string().describe("Masked"),
      verified_at: z.string(),
      proof_expires_at: z.string(),
    }),
  })
  .meta({ id: "AutoVerifyResult" });

const tokenOf = (header: string | undefined): string => {
  // a missing token is answered like a wrong one (no oracle)
  if (!header || header.length > 200) throw new AppError("not_found", "verification request not found");
  return header;
};

/** Smart reuse for the hosted page: token-authorised (header X-Request-Token), no API key. */
export function reuseRoutes(_config: Config, client: Client<typeof VerificationRequestService>): RouteDef[] {
  const c = client;
  const auth = "Authorised by the request token of verification_url (the part after #) in the X-Request-Token header; a wrong token answers 404.";
  return [
    route({
      method: "get",
      path: "/api/v1/verify/request/{id}/proofs",
      tag: TAG,
      summary: "Existing proofs the end user can reuse for the request's unverified assets",
      description:
        `${auth} Needs the request's external_user_id: lists that user's verified, unrevoked, unexpired verifications (same tenant and ` +
        "environment) of each unverified asset's type and identifier (any identifier when the asset left it open; allowed channels only), " +
        "verified within max_proof_age before the request when it sets one. Empty for a request without external_user_id or no longer open.",
      auth: "public",
      params: idParams("verificationRequest"),
      responses: {
        200: { description: "The reusable proofs, newest first per asset", schema: ReusableProofList },
        404: err("not_found: unknown request or wrong token"),
        410: err("request_expired"),
      },
      async handler({ req, params }) {
        const r = await c.listReusableProofs({ requestId: params.id, token: tokenOf(req.get(REQUEST_TOKEN_HEADER)) });
        return {
          headers: { "cache-control": "no-store" },
          body: {
            request_id: params.id,
            proofs: r.proofs.map((p) => ({
              asset_index: p.assetIndex,
              verification_id: p.verificationId,
              type: p.type,
              channel: p.channel,
              identifier: p.identifier,
              verified_at: iso(p.verifiedAt),
              proof_expires_at: iso(p.proofExpiresAt),
            })),
          },
        };
      },
    }),
    route({
      method: "post",
      path: "/api/v1/verify/request/{id}/assets/{assetIndex}/auto-verify",
      tag: TAG,
      summary: "Complete an asset with an existing proof (a new verification and proof with method reused_proof)",
      description:
        `${auth} The asset gets a new verification, verified at once, whose proof carries the claim method = reused_proof ` +
        "(reused_from names the original verification); the request then moves as with any verification (webhooks included).",
      auth: "public",
      params: AssetParams,
      body: AutoVerifyBody,
      responses: {
        200: { description: "The asset is verified", schema: AutoVerifyResult },
        400: err("validation_error"),
        404: err("not_found (unknown request or asset, wrong token) or no_existing_proof"),
        409: err("already_verified, or invalid_state (the request is completed or cancelled)"),
        410: err("request_expired"),
        422: err("proof_too_old: verified longer than max_proof_age before the request"),
      },
      async handler({ req, params, body }) {
        const r = await c.autoVerifyAsset({
          requestId: params.id,
          token: tokenOf(req.get(REQUEST_TOKEN_HEADER)),
          assetIndex: params.assetIndex,
          verificationId: body.verification_id,
        });
        return {
          headers: { "cache-control": "no-store" },
          body: {
            success: true,
            request_id: r.requestId,
            request_status: r.requestStatus,
            asset: { index: r.assetIndex, status: r.assetStatus, verification_id: r.verificationId },
            verification: {
              id: r.verificationId,
              method: "reused_proof",
              reused_from: r.reusedFrom,
              type: r.type,
              channel: r.channel,
              identifier: r.identifier,
              verified_at: iso(r.verifiedAt),
              proof_expires_at: iso(r.proofExpiresAt),
            },
          },
        };
      },
    }),
  ];
}
