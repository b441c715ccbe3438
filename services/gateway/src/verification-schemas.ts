/**
 * A verification as the REST API answers it: its schema and its conversion from the RPC message,
 * shared by the resources that answer verifications (routes/verifications.ts, domains.ts,
 * personal-data.ts).
 */
import type { Verification as VerificationMsg } from "@icv/contracts/gen/icv/verification/v1/verification_pb.ts";
import { iso, PROOF_METHODS, REVOKE_REASONS, SUSPEND_REASONS, type PhoneDelivery as PhoneDeliveryWord, type ProofMethod } from "@icv/platform";
import { z } from "zod";
import { VERIFICATION_EXAMPLE } from "./verification-examples.ts";
import {
  assetChannel,
  assetType,
  HolderKey,
  jsonObject,
  PhoneDelivery,
  ProofFormat,
  ProofRefBody,
  projectIdShown,
  proofBody,
  timestamp,
  VERIFICATION_STATUSES,
} from "./schemas.ts";

const Challenge = z
  .object({
    code: z.string().length(6).optional().describe("Only on creation, and only for phone with delivery inbound (the user sends it from the phone)"),
    expires_at: timestamp,
    instruction: z.string(),
    deep_link: z.string().optional(),
    message: z.string().optional().describe("Wallets: the exact text to sign. Domains: the TXT record / file value"),
  })
  .meta({ id: "Challenge" });

/** A verification's proof, as GET answers it (test-verify answers it beside its flat proof_token and proof_expires_at). */

export const Verification = z
  .object({
    id: z.string(),
    type: assetType,
    channel: assetChannel,
    status: z.enum(VERIFICATION_STATUSES).describe("suspended: verified, but control could not be confirmed again (until a later check reinstates it)"),
    identifier: z.string().nullable().describe("null once redacted (redacted_at)"),
    challenge: Challenge.optional(),
    created_at: timestamp,
    verified_at: timestamp.optional(),
    proof: ProofRefBody.optional(),
    client_metadata: jsonObject.optional(),
    external_user_id: z.string().optional(),
    attempts: z.number().int(),
    max_attempts: z.number().int(),
    revoked_at: timestamp.optional(),
    revoked_reason: z.enum(REVOKE_REASONS).optional(),
    test_mode: z.boolean(),
    method: z
      .enum(PROOF_METHODS)
      .optional()
      .describe(
        "How control was shown (the proof's method claim), once verified; reused_proof: completed from an earlier proof (smart reuse, see reused_from)",
      ),
    reused_from: z.string().optional().describe("The verification whose proof was reused (method reused_proof)"),
    delivery: PhoneDelivery.optional().describe(
      "Phone: inbound (reverse OTP: the user sends the shown code from the phone) or outbound (we sent a code to the phone)",
    ),
    updated_at: timestamp.describe("The last change (status, attempts, challenge); created_at until then"),
    callback_url: z.string().optional().describe("This verification's own webhook URL, when created with one"),
    project_id: projectIdShown,
    proof_format: ProofFormat,
    holder_key: HolderKey.optional(),
    suspended_at: timestamp.optional(),
    suspended_reason: z.enum(SUSPEND_REASONS).optional(),
    redacted_at: timestamp.optional().describe("When its personal data was erased (redact, user-wide redaction, retention)"),
  })
  .meta({
    id: "Verification",
    example: VERIFICATION_EXAMPLE,
  });

/** RPC message → REST verification (snake_case, ISO timestamps, absent members left out). */
export function toRest(v: VerificationMsg) {
  return {
    id: v.id,
    type: v.type,
    channel: v.channel,
    status: v.status,
    identifier: v.redactedAt ? null : v.identifier,
    ...(v.challenge
      ? {
          challenge: {
            ...(v.challenge.code ? { code: v.challenge.code } : {}),
            expires_at: iso(v.challenge.expiresAt),
            instruction: v.challenge.instruction,
            ...(v.challenge.deepLink ? { deep_link: v.challenge.deepLink } : {}),
            ...(v.challenge.message ? { message: v.challenge.message } : {}),
          },
        }
      : {}),
    created_at: iso(v.createdAt),
    ...(v.verifiedAt ? { verified_at: iso(v.verifiedAt) } : {}),
    ...(v.proof ? { proof: proofBody(v.proof) } : {}),
    ...(v.clientMetadata ? { client_metadata: v.clientMetadata } : {}),
    ...(v.externalUserId ? { external_user_id: v.externalUserId } : {}),
    attempts: v.attempts,
    max_attempts: v.maxAttempts,
    ...(v.revokedAt ? { revoked_at: iso(v.revokedAt), revoked_reason: v.revokedReason } : {}),
    test_mode: v.testMode,
    ...(v.method ? { method: v.method as ProofMethod } : {}),
    ...(v.reusedFrom ? { reused_from: v.reusedFrom } : {}),
    ...(v.delivery ? { delivery: v.delivery as PhoneDeliveryWord } : {}),
    updated_at: iso(v.updatedAt ?? v.createdAt),
    ...(v.callbackUrl ? { callback_url: v.callbackUrl } : {}),
    ...(v.projectId ? { project_id: v.projectId } : {}),
    proof_format: (v.proofFormat || "jwt") as "jwt" | "sd-jwt-vc",
    ...(v.holderKey ? { holder_key: v.holderKey } : {}),
    ...(v.suspendedAt ? { suspended_at: iso(v.suspendedAt), suspended_reason: v.suspendedReason as never } : {}),
    ...(v.redactedAt ? { redacted_at: iso(v.redactedAt) } : {}),
  };
}
