// Personal data (DECISIONS.md, "Personal data: at rest, retention, erasure, export"; docs/privacy.md):
// redact one verification, every verification of an external user, and export what is held about one.
import { z } from "zod";
import type { Delivery } from "@icv/contracts/gen/icv/webhook/v1/webhook_service_pb.ts";
import { iso } from "@icv/platform";
import { scopeOf, type Clients } from "../clients.ts";
import { idParams } from "../input.ts";
import { route, type RouteDef } from "../registry.ts";
import { ErrorBody, REQUEST_STATUSES, timestamp } from "../schemas.ts";
import { DELIVERED_EVENTS, DELIVERY_STATUSES } from "./webhook-deliveries.ts";
import { toRest, Verification } from "../verification-schemas.ts";

const err = (description: string) => ({ description, schema: ErrorBody });

const RedactBody = z
  .object({
    revoke_proofs: z
      .boolean()
      .default(false)
      .describe("Also revoke the proofs (reason user_request). By default they stay valid: no token holds an identifier"),
  })
  .strict()
  .meta({ id: "Redact", example: { revoke_proofs: false } });

const RedactResult = z
  .object({
    redacted: z.number().int().describe("Verifications whose personal data is erased (all of them again on a repeat: idempotent)"),
    revoked: z.number().int().describe("Of those, the ones whose proof a redaction revoked"),
  })
  .meta({ id: "RedactResult", example: { redacted: 1, revoked: 0 } });

const ExternalUserParams = z.object({ externalUserId: z.string().min(1).max(255) });

const EXPORT_EXAMPLE_VERIFICATION = {
  id: "ver_01M80FSQZ6SP5J0XCXB13KRSNC",
  type: "phone",
  channel: "telegram",
  status: "verified",
  identifier: "+37069199199",
  created_at: "2026-11-22T02:01:42.118Z",
  verified_at: "2026-11-22T02:01:43.510Z",
  proof: { token: "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCIsImtpZCI6…", expires_at: "2026-12-22T02:01:43.510Z", identifier_salt: "9f2c4e…" },
  external_user_id: "user-42",
  attempts: 0,
  max_attempts: 5,
  test_mode: true,
  method: "test",
  updated_at: "2026-11-22T02:01:43.510Z",
  proof_format: "jwt",
};

const UserExport = z
  .object({
    external_user_id: z.string(),
    exported_at: timestamp,
    verifications: z
      .array(Verification)
      .describe("Every verification of this user, oldest first, identifiers and client_metadata included (null once redacted)"),
    requests: z
      .array(
        z.object({
          request_id: z.string(),
          verification_id: z.string(),
          asset_index: z.number().int(),
          status: z.enum(REQUEST_STATUSES),
          created_at: timestamp,
        }),
      )
      .describe("The verification requests whose assets these verifications completed or followed"),
    deliveries: z
      .array(
        z.object({
          id: z.string(),
          verification_id: z.string().nullable(),
          event_type: z.enum(DELIVERED_EVENTS),
          status: z.enum(DELIVERY_STATUSES),
          created_at: timestamp,
        }),
      )
      .describe("Webhook deliveries of these verifications' events: event types and times (bodies are not part of the export)"),
  })
  .meta({
    id: "UserExport",
    example: {
      external_user_id: "user-42",
      exported_at: "2026-11-23T10:00:00.000Z",
      verifications: [EXPORT_EXAMPLE_VERIFICATION],
      requests: [],
      deliveries: [
        {
          id: "whd_01M80FSR2D8Q5V3W6N0B1C4Y7K",
          verification_id: "ver_01M80FSQZ6SP5J0XCXB13KRSNC",
          event_type: "verification.completed",
          status: "delivered",
          created_at: "2026-11-22T02:01:43.600Z",
        },
      ],
    },
  });

/** An export lists at most this many pages of 100 deliveries (the newest). */
const EXPORT_DELIVERY_PAGES = 10;

/** The webhook deliveries of these verifications' events, newest first (up to 1,000). */
async function deliveriesOf(c: Clients, scope: ReturnType<typeof scopeOf>, ids: string[]) {
  const out: Delivery[] = [];
  if (!ids.length) return out;
  for (let page = 1; page <= EXPORT_DELIVERY_PAGES; page++) {
    const d = await c.webhook.listDeliveries({ scope, page: { page, limit: 100 }, verificationIds: ids });
    out.push(...d.deliveries);
    if (!d.pageInfo?.hasMore) break;
  }
  return out;
}

export function personalDataRoutes(c: Clients, now: () => Date = () => new Date()): RouteDef[] {
  return [
    route({
      method: "post",
      path: "/api/v1/verifications/{id}/redact",
      tag: "Verifications",
      summary: "Redact a verification: erase its identifier, client_metadata and test messages (idempotent)",
      description:
        "Erases the verification's personal data: identifier, client_metadata, challenge, its test messages and the personal parts of its stored webhook payloads. " +
        "It keeps its id, type, channel, status, dates and redacted_at, and answers identifier: null from then on. A pending verification is cancelled first (expired). " +
        "Its proof stays valid unless revoke_proofs is true (reason user_request). A verification.redacted event goes to your webhook. A repeat answers the same counts.",
      auth: "key",
      params: idParams("verification"),
      body: RedactBody,
      responses: { 200: { description: "Redacted", schema: RedactResult }, 400: err("validation_error"), 404: err("not_found") },
      async handler({ req, params, body }) {
        const r = await c.verification.redactVerification({ scope: scopeOf(req), id: params.id, revokeProofs: body.revoke_proofs });
        return { body: { redacted: r.redacted, revoked: r.revoked } };
      },
    }),
    route({
      method: "delete",
      path: "/api/v1/verifications/users/{externalUserId}",
      tag: "Verified users",
      summary: "Redact every verification of an external user (right to erasure; idempotent)",
      description:
        "Redacts, as POST /api/v1/verifications/{id}/redact does, every verification of the key's tenant and environment that carries this external_user_id " +
        "(or carried it before a redaction). Pending ones are cancelled first; revoke_proofs revokes their proofs too. Answers the counts; a repeat answers the same.",
      auth: "key",
      params: ExternalUserParams,
      body: RedactBody,
      responses: {
        200: { description: "Redacted", schema: RedactResult },
        400: err("validation_error"),
        404: err("not_found: no verification carries this external_user_id in this tenant and environment"),
      },
      async handler({ req, params, body }) {
        const r = await c.verification.redactUser({ scope: scopeOf(req), externalUserId: params.externalUserId, revokeProofs: body.revoke_proofs });
        return { body: { redacted: r.redacted, revoked: r.revoked } };
      },
    }),
    route({
      method: "get",
      path: "/api/v1/verifications/users/{externalUserId}/export",
      tag: "Verified users",
      summary: "Everything held about an external user, as one JSON document (data-subject access request)",
      description:
        "The user's verifications with identifiers and client_metadata (null once redacted), proofs' metadata (expiry, format, method, revocation), " +
        "the verification requests they belong to, and the webhook deliveries of their events (type, status, time).",
      auth: "key",
      params: ExternalUserParams,
      responses: {
        200: { description: "The export", schema: UserExport },
        404: err("not_found: no verification carries this external_user_id in this tenant and environment"),
      },
      async handler({ req, params }) {
        const scope = scopeOf(req);
        const r = await c.verification.exportUser({ scope, externalUserId: params.externalUserId });
        const deliveries = await deliveriesOf(
          c,
          scope,
          r.verifications.map((v) => v.id),
        );
        return {
          body: {
            external_user_id: params.externalUserId,
            exported_at: now().toISOString(),
            verifications: r.verifications.map(toRest),
            requests: r.requests.map((m) => ({
              request_id: m.requestId,
              verification_id: m.verificationId,
              asset_index: m.assetIndex,
              status: m.status,
              created_at: iso(m.createdAt),
            })),
            deliveries: deliveries.map((x) => ({
              id: x.id,
              verification_id: x.verificationId ?? null,
              event_type: x.eventType,
              status: x.status,
              created_at: iso(x.createdAt),
            })),
          },
        };
      },
    }),
  ];
}
