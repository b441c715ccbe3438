/**
 * The bodies of the verification webhooks (docs/events-and-webhooks.md), for the OpenAPI
 * document's `x-webhooks` (OpenAPI 3.0 has no `webhooks`; 3.1's name for the same thing). The
 * webhook service builds them from the event catalogue (icv.events.v1); these schemas describe
 * what a receiver gets and are checked against real deliveries in the e2e suite.
 */
import { z } from "zod";
import { jsonObject, timestamp } from "./schemas.ts";

const envelope = {
  id: z.string().describe("The event id (also the webhook-id header): the same on every attempt"),
  test: z.boolean().describe("true for test-mode events"),
  created_at: timestamp,
};

const verificationFields = {
  verification_id: z.string(),
  type: z.string(),
  channel: z.string(),
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
  .enum(["record_missing", "record_mismatch", "unreachable", "policy_refused"])
  .describe("Why control could not be confirmed again: no record, other values, no name server answered (3 checks in a row), or the owner's _icv policy")
  .meta({ id: "SuspensionReason" });

export const VerificationCompletedWebhook = z
  .object({ ...envelope, event: z.literal("verification.completed"), ...verificationFields, status: z.literal("verified") })
  .meta({ id: "VerificationCompletedWebhook" });

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

/** event type → the schema of its body. */
export const WEBHOOK_SCHEMAS = {
  "verification.completed": VerificationCompletedWebhook,
  "verification.suspended": VerificationSuspendedWebhook,
  "verification.reinstated": VerificationReinstatedWebhook,
} as const;
