/**
 * The bodies of the verification webhooks (docs/events-and-webhooks.md), for the OpenAPI
 * document's `x-webhooks` (OpenAPI 3.0 has no `webhooks`; 3.1's name for the same thing). The
 * webhook service builds them from the event catalogue (icv.events.v1); these schemas describe
 * what a receiver gets and are checked against real deliveries in the e2e suite.
 */
import { z } from "zod";
import { SUSPEND_REASONS, type WebhookEventType } from "@icv/platform";
import { assetChannel, assetType, jsonObject, timestamp, VERIFICATION_STATUSES } from "./schemas.ts";

const envelope = {
  id: z.string().describe("The event id (also the webhook-id header): the same on every attempt"),
  test: z.boolean().describe("true for test-mode events"),
  created_at: timestamp,
};

const verificationFields = {
  verification_id: z.string(),
  type: assetType,
  channel: assetChannel,
  verified_at: timestamp,
  external_user_id: z.string().nullable(),
  client_metadata: jsonObject.nullable(),
  proof: z
    .object({
      token: z.string().describe("The RS256 JWT proof"),
      expires_at: timestamp,
      identifier_salt: z.string().optional(),
      sd_jwt_vc: z.string().optional(),
    })
    .nullable(),
};

export const SuspensionReason = z
  .enum(SUSPEND_REASONS)
  .describe("Why control could not be confirmed again: no record, other values, no name server answered (3 checks in a row), or the owner's _icv policy")
  .meta({ id: "SuspensionReason" });

export const VerificationCompletedWebhook = z
  .object({ ...envelope, event: z.literal("verification.completed"), ...verificationFields, status: z.literal("verified") })
  .meta({
    id: "VerificationCompletedWebhook",
    // the body docs/events-and-webhooks.md shows
    example: {
      id: "evt_01M80FSR2D8Q5V3W6N0B1C4Y7K",
      event: "verification.completed",
      test: true,
      created_at: "2026-11-22T02:01:43.512Z",
      verification_id: "ver_01M80FSQZ6SP5J0XCXB13KRSNC",
      type: "phone",
      channel: "telegram",
      status: "verified",
      verified_at: "2026-11-22T02:01:43.510Z",
      external_user_id: "user-42",
      client_metadata: null,
      proof: { token: "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCIsImtpZCI6…", expires_at: "2026-12-22T02:01:43.510Z" },
    },
  });

export const VerificationSuspendedWebhook = z
  .object({
    ...envelope,
    event: z.literal("verification.suspended"),
    ...verificationFields,
    status: z.literal("suspended"),
    suspended_at: timestamp,
    reason: SuspensionReason,
  })
  .describe("A verified verification's proof is suspended (status list value 2, validate reason suspended): a re-check failed")
  .meta({ id: "VerificationSuspendedWebhook" });

export const VerificationReinstatedWebhook = z
  .object({
    ...envelope,
    event: z.literal("verification.reinstated"),
    ...verificationFields,
    status: z.literal("verified"),
    suspended_at: timestamp.describe("When the suspension that ended began"),
    reason: SuspensionReason,
  })
  .describe("A suspended proof is valid again (status list value 0): a later re-check passed")
  .meta({ id: "VerificationReinstatedWebhook" });

export const VerificationRedactedWebhook = z
  .object({
    ...envelope,
    event: z.literal("verification.redacted"),
    verification_id: z.string(),
    type: assetType,
    channel: assetChannel,
    status: z.enum(VERIFICATION_STATUSES).describe("Its status after the redaction (a pending verification was cancelled first: expired)"),
    redacted_at: timestamp,
    proof_revoked: z.boolean().describe("Whether this redaction revoked its proof (revoke_proofs: true)"),
    reason: z.enum(["request", "user_request", "retention"]).describe("redact, user-wide redaction, or the retention sweeper"),
  })
  .describe("A verification's personal data was erased (identifier, client_metadata, test messages, stored webhook payloads); the body carries none")
  .meta({
    id: "VerificationRedactedWebhook",
    example: {
      id: "evt_01M80GA7T2XKQ4B9R6N3C8D5FZ",
      event: "verification.redacted",
      test: true,
      created_at: "2026-11-23T10:00:00.000Z",
      verification_id: "ver_01M80FSQZ6SP5J0XCXB13KRSNC",
      type: "phone",
      channel: "telegram",
      status: "verified",
      redacted_at: "2026-11-23T10:00:00.000Z",
      proof_revoked: false,
      reason: "request",
    },
  });

/** verification_request.partial, .completed and .expired: one shape (VerificationRequestChanged). */
export const VerificationRequestWebhook = z
  .object({
    ...envelope,
    event: z.enum(["verification_request.partial", "verification_request.completed", "verification_request.expired"]),
    request_id: z.string(),
    reference_id: z.string().nullable(),
    status: z.enum(["partial", "completed", "expired"]),
    proofs: z.array(
      z.object({
        asset_index: z.number().int(),
        type: assetType,
        verification_id: z.string().nullable(),
        proof_token: z.string(),
        expires_at: timestamp,
        sd_jwt_vc: z.string().optional(),
        identifier_salt: z.string().optional(),
      }),
    ),
    external_user_id: z.string().optional(),
    changed_at: timestamp,
  })
  .describe("A verification request moved: some required assets verified (partial, with partial_ok), all of them (completed), or it expired")
  .meta({ id: "VerificationRequestWebhook" });

/** event type → the schema of its body: one for each event type sent as a webhook (@icv/platform's WEBHOOK_EVENT_TYPES), no more. */
export const WEBHOOK_SCHEMAS = {
  "verification.completed": VerificationCompletedWebhook,
  "verification.suspended": VerificationSuspendedWebhook,
  "verification.reinstated": VerificationReinstatedWebhook,
  "verification.redacted": VerificationRedactedWebhook,
  "verification_request.partial": VerificationRequestWebhook,
  "verification_request.completed": VerificationRequestWebhook,
  "verification_request.expired": VerificationRequestWebhook,
} as const satisfies Record<WebhookEventType, z.ZodType>;
