/**
 * A verification as the REST API answers it: its schema and its conversion from the RPC message,
 * shared by the resources that answer verifications (routes/verifications.ts, domains.ts,
 * personal-data.ts).
 */
import { type ProofRef, type Verification as VerificationMsg, VerificationSchema } from "@icv/contracts/gen/icv/verification/v1/verification_pb.ts";
import { iso, PROOF_METHODS, REVOKE_REASONS, restOf, SUSPEND_REASONS, type FieldRules } from "@icv/platform";
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

/** Where the REST verification differs from its message's fields (@icv/platform restOf: the proto is the table). */
const REST_RULES: FieldRules = {
  identifier: (v: VerificationMsg) => (v.redactedAt ? null : v.identifier),
  "proof.identifier_salt": (p: ProofRef) => p.identifierSalt || undefined,
  revoked_reason: (v: VerificationMsg) => (v.revokedAt ? v.revokedReason : undefined),
  method: (v: VerificationMsg) => v.method || undefined,
  updated_at: (v: VerificationMsg) => iso(v.updatedAt ?? v.createdAt),
  proof_format: (v: VerificationMsg) => v.proofFormat || "jwt",
  suspended_reason: (v: VerificationMsg) => (v.suspendedAt ? v.suspendedReason : undefined),
};

/** RPC message → REST verification (snake_case, ISO timestamps, absent members left out), by the message's descriptor. */
export const toRest = (v: VerificationMsg) => restOf(VerificationSchema, v, REST_RULES) as z.output<typeof Verification>;
