/**
 * The webhook bodies (docs/events-and-webhooks.md): `{id, event, test, created_at}` and the
 * event's payload, one shape per event family. They document what the webhook service sends
 * (services/webhook/src/payload.ts builds it from the icv.events.v1 messages); the OpenAPI
 * document lists them under x-webhooks, and test/e2e/sdk-dropin.test.ts checks a delivered body
 * against them.
 */
import { z } from "zod";
import { timestamp } from "./schemas.ts";

const envelope = (event: readonly [string, ...string[]]) => ({
  id: z.string().describe("The event id (evt_…): the same event may arrive more than once; dedupe on it or on webhook-id"),
  event: z.enum(event),
  test: z.boolean().describe("true for test-key data"),
  created_at: timestamp,
});

const proof = z
  .object({
    token: z.string().describe("The RS256 proof JWT"),
    expires_at: timestamp,
    identifier_salt: z.string().optional(),
    sd_jwt_vc: z.string().optional().describe("proof_format sd-jwt-vc: the SD-JWT VC"),
  })
  .meta({ id: "WebhookProof" });

const verification = {
  verification_id: z.string(),
  type: z.string(),
  channel: z.string(),
  status: z.enum(["verified", "suspended"]),
  verified_at: timestamp,
  external_user_id: z.string().nullable(),
  client_metadata: z.record(z.string(), z.unknown()).nullable(),
  proof: proof.optional(),
};

export const VerificationCompletedWebhook = z.object({ ...envelope(["verification.completed"]), ...verification }).meta({
  id: "VerificationCompletedWebhook",
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

export const VerificationSuspensionWebhook = z
  .object({
    ...envelope(["verification.suspended", "verification.reinstated"]),
    ...verification,
    suspended_at: timestamp.describe("When the suspension began"),
    reason: z.enum(["record_missing", "record_mismatch", "unreachable", "policy_refused"]).describe("Why it was suspended"),
  })
  .meta({ id: "VerificationSuspensionWebhook" });

export const VerificationRequestWebhook = z
  .object({
    ...envelope(["verification_request.partial", "verification_request.completed", "verification_request.expired"]),
    request_id: z.string(),
    reference_id: z.string().nullable(),
    status: z.enum(["partial", "completed", "expired"]),
    proofs: z.array(
      z.object({
        asset_index: z.number().int(),
        type: z.string(),
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
  .meta({ id: "VerificationRequestWebhook" });

/** Event type → its body, for x-webhooks. */
export const WEBHOOKS: Record<string, { schema: z.ZodType; summary: string }> = {
  "verification.completed": { schema: VerificationCompletedWebhook, summary: "A verification was verified (its proof is in the body)" },
  "verification.suspended": { schema: VerificationSuspensionWebhook, summary: "A re-check found the asset no longer under the user's control" },
  "verification.reinstated": { schema: VerificationSuspensionWebhook, summary: "A suspended verification passed its re-check again" },
  "verification_request.partial": { schema: VerificationRequestWebhook, summary: "Some required assets of a request are verified (partial_ok only)" },
  "verification_request.completed": { schema: VerificationRequestWebhook, summary: "Every required asset of a request is verified" },
  "verification_request.expired": { schema: VerificationRequestWebhook, summary: "A request expired before it completed" },
};
