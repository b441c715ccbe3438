import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Verification as VerificationMsg } from "@icv/contracts/gen/icv/verification/v1/verification_pb.ts";
import { iso, PROOF_METHODS, type ProofMethod } from "@icv/platform";
import { z } from "zod";
import { scopeOf, type Clients } from "../clients.ts";
import { idParams, timestampParam } from "../input.ts";
import { route, type RouteDef } from "../registry.ts";
import { ASSET_TYPES, ErrorBody, jsonObject, PageQuery, Pagination, timestamp, toPagination } from "../schemas.ts";

const VERIFICATION_STATUSES = ["pending", "verified", "failed", "expired", "revoked"] as const;

const PhoneDelivery = z.enum(["inbound", "outbound"]);

const Challenge = z
  .object({
    code: z.string().length(6).optional().describe("Only on creation, and only for phone with delivery inbound (the user sends it from the phone)"),
    expires_at: timestamp,
    instruction: z.string(),
    deep_link: z.string().optional(),
    message: z.string().optional().describe("Wallets: the exact text to sign. Domains: the TXT record / file value"),
  })
  .meta({ id: "Challenge" });

const Verification = z
  .object({
    id: z.string(),
    type: z.enum(ASSET_TYPES),
    channel: z.string(),
    status: z.enum(VERIFICATION_STATUSES),
    identifier: z.string(),
    challenge: Challenge.optional(),
    created_at: timestamp,
    verified_at: timestamp.optional(),
    proof: z.object({ token: z.string(), expires_at: timestamp }).optional(),
    client_metadata: jsonObject.optional(),
    external_user_id: z.string().optional(),
    attempts: z.number().int(),
    max_attempts: z.number().int(),
    revoked_at: timestamp.optional(),
    revoked_reason: z.string().optional(),
    test_mode: z.boolean(),
    method: z
      .enum(PROOF_METHODS)
      .optional()
      .describe("How control was shown (the proof's method claim), once verified; reused_proof: completed from an earlier proof (smart reuse, see reused_from)"),
    reused_from: z.string().optional().describe("The verification whose proof was reused (method reused_proof)"),
    delivery: PhoneDelivery.optional().describe("Phone: inbound (reverse OTP: the user sends the shown code from the phone) or outbound (we sent a code to the phone)"),
  })
  .meta({ id: "Verification" });

const CreateVerificationBody = z
  .object({
    type: z.enum(ASSET_TYPES),
    channel: z.string().min(1).max(64),
    identifier: z.string().min(1).max(320),
    client_metadata: jsonObject.optional(),
    external_user_id: z.string().min(1).max(255).optional(),
    proof_expires_in: z.number().int().min(60).max(31_536_000).optional(),
    delivery: PhoneDelivery.optional().describe(
      "Phone only. inbound (default): the answer shows a code the user sends from the phone; only that provider message completes it. " +
        "outbound (sms, whatsapp): we send a code to the number, never show it, and submit checks it.",
    ),
  })
  .strict()
  .meta({ id: "CreateVerification" });

const SubmitBody = z
  .object({
    challenge_code: z.string().max(64).optional(),
    source_identifier: z.string().max(320).optional(),
    signature: z.string().max(1024).optional(),
    bot_token: z.string().max(256).optional(),
  })
  .strict()
  .meta({ id: "SubmitChallenge" });

const TestVerifyResponse = z
  .object({
    id: z.string(),
    type: z.string(),
    channel: z.string(),
    status: z.literal("verified"),
    identifier: z.string(),
    verified_at: timestamp,
    proof_token: z.string(),
    proof_expires_at: timestamp,
    test_mode: z.literal(true),
  })
  .meta({ id: "TestVerifyResult" });

const ListVerificationsQuery = z
  .object({
    ...PageQuery,
    status: z.enum(VERIFICATION_STATUSES).optional(),
    type: z.enum(ASSET_TYPES).optional(),
    channel: z.string().max(64).optional(),
    external_user_id: z.string().max(255).optional(),
    created_after: timestampParam.optional(),
    created_before: timestampParam.optional(),
  })
  .strict();

const VerificationList = z.object({ data: z.array(Verification), pagination: Pagination }).meta({ id: "VerificationList" });

const err = (description: string) => ({ description, schema: ErrorBody });

/** The resend answer: the spec's {success, message, expires_at} plus the verification object (GET shape). */
const ResendResult = Verification.extend({
  success: z.literal(true),
  message: z.string().describe("Where the new code went; test keys send nothing"),
  expires_at: z.string().describe("The new challenge expiry (= challenge.expires_at)"),
  resends_remaining: z.number().int().describe("Resends this verification still allows (5 in all)"),
}).meta({ id: "ResendResult" });

/** RPC message → REST verification (snake_case, ISO timestamps, absent members left out). */
export function toRest(v: VerificationMsg) {
  return {
    id: v.id,
    type: v.type,
    channel: v.channel,
    status: v.status,
    identifier: v.identifier,
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
    ...(v.proof ? { proof: { token: v.proof.token, expires_at: iso(v.proof.expiresAt) } } : {}),
    ...(v.clientMetadata ? { client_metadata: v.clientMetadata } : {}),
    ...(v.externalUserId ? { external_user_id: v.externalUserId } : {}),
    attempts: v.attempts,
    max_attempts: v.maxAttempts,
    ...(v.revokedAt ? { revoked_at: iso(v.revokedAt), revoked_reason: v.revokedReason } : {}),
    test_mode: v.testMode,
    ...(v.method ? { method: v.method as ProofMethod } : {}),
    ...(v.reusedFrom ? { reused_from: v.reusedFrom } : {}),
    ...(v.delivery ? { delivery: v.delivery as "inbound" | "outbound" } : {}),
  };
}

export function verificationRoutes(c: Clients): RouteDef[] {
  return [
    route({
      method: "post",
      path: "/api/v1/verifications",
      tag: "Verifications",
      summary: "Create a verification (a challenge for one asset on one channel)",
      auth: "key",
      body: CreateVerificationBody,
      responses: {
        201: { description: "Created; the challenge tells the user what to do", schema: Verification },
        400: err("validation_error, invalid_identifier, invalid_channel_for_type or channel_unavailable"),
        429: err("rate_limited: the API rate, or a send limit (5 codes per address in 10 min, the tenant's hourly budget); Retry-After says when"),
      },
      async handler({ req, body }) {
        const r = await c.verification.createVerification({
          scope: scopeOf(req),
          type: body.type,
          channel: body.channel,
          identifier: body.identifier,
          clientMetadata: body.client_metadata as never,
          externalUserId: body.external_user_id,
          proofExpiresIn: body.proof_expires_in,
          delivery: body.delivery,
        });
        return { status: 201, body: toRest(r.verification!) };
      },
    }),
    route({
      method: "get",
      path: "/api/v1/verifications",
      tag: "Verifications",
      summary: "List verifications, newest first",
      auth: "key",
      query: ListVerificationsQuery,
      responses: { 200: { description: "A page of verifications", schema: VerificationList }, 400: err("validation_error") },
      async handler({ req, query }) {
        const page = query.page ?? 1;
        const limit = query.limit ?? 20;
        const r = await c.verification.listVerifications({
          scope: scopeOf(req),
          page: { page, limit },
          status: query.status,
          type: query.type,
          channel: query.channel,
          externalUserId: query.external_user_id,
          createdAfter: query.created_after ? timestampFromDate(new Date(query.created_after)) : undefined,
          createdBefore: query.created_before ? timestampFromDate(new Date(query.created_before)) : undefined,
        });
        return { body: { data: r.verifications.map(toRest), pagination: toPagination(r.pageInfo!) } };
      },
    }),
    route({
      method: "get",
      path: "/api/v1/verifications/{id}",
      tag: "Verifications",
      summary: "Get a verification (with its proof once verified)",
      auth: "key",
      params: idParams("verification"),
      responses: { 200: { description: "The verification", schema: Verification }, 404: err("not_found") },
      async handler({ req, params }) {
        const r = await c.verification.getVerification({ scope: scopeOf(req), id: params.id });
        return { body: toRest(r.verification!) };
      },
    }),
    route({
      method: "post",
      path: "/api/v1/verifications/{id}/submit",
      tag: "Verifications",
      summary: "Submit a challenge code (email, outbound phone, domain by email), a wallet signature or a bot token",
      description:
        "A phone verification with delivery inbound (reverse OTP, the default) is completed only by the code arriving from the phone " +
        "through the provider; submitting it here is invalid_state, for live and test keys alike.",
      auth: "key",
      params: idParams("verification"),
      body: SubmitBody,
      responses: {
        200: { description: "Verified; the verification with its proof", schema: Verification },
        400: err("invalid_code (with attempts_remaining), max_attempts_exceeded, challenge_expired, invalid_signature, validation_error"),
        404: err("not_found"),
        409: err("invalid_state: not pending, or an inbound phone verification (send the code from the phone)"),
      },
      async handler({ req, params, body }) {
        const r = await c.verification.submitChallenge({
          scope: scopeOf(req),
          id: params.id,
          challengeCode: body.challenge_code,
          sourceIdentifier: body.source_identifier,
          signature: body.signature,
          botToken: body.bot_token,
        });
        return { body: toRest(r.verification!) };
      },
    }),
    route({
      method: "post",
      path: "/api/v1/verifications/{id}/test-verify",
      tag: "Verifications",
      summary: "Complete a test verification at once (test keys only)",
      auth: "key",
      params: idParams("verification"),
      responses: {
        200: { description: "Verified, with its proof", schema: TestVerifyResponse },
        403: err("test_mode_required: a live key"),
        404: err("not_found"),
        409: err("invalid_state"),
      },
      async handler({ req, params }) {
        const r = await c.verification.testVerify({ scope: scopeOf(req), id: params.id });
        const v = r.verification!;
        return {
          body: {
            id: v.id,
            type: v.type,
            channel: v.channel,
            status: v.status,
            identifier: v.identifier,
            verified_at: iso(v.verifiedAt),
            proof_token: v.proof?.token,
            proof_expires_at: iso(v.proof?.expiresAt),
            test_mode: true,
          },
        };
      },
    }),
    route({
      method: "post",
      path: "/api/v1/verifications/{id}/verify",
      tag: "Verifications",
      summary: "Run the DNS or HTTP check of a domain verification now (planned: arrives with the domain service)",
      auth: "key",
      params: idParams("verification"),
      responses: { 200: { description: "The verification", schema: Verification } },
    }),
    route({
      method: "post",
      path: "/api/v1/verifications/{id}/resend",
      tag: "Verifications",
      summary: "Send a new code (email, domain by email, outbound phone): the old one stops working and the challenge gets a new expires_at (at most once per 60 s, 5 times in all)",
      auth: "key",
      params: idParams("verification"),
      responses: {
        200: { description: "Sent (test keys send nothing); the verification with its new challenge, never the code", schema: ResendResult },
        400: err("resend_not_supported: not a code the service sends (email, outbound phone)"),
        404: err("not_found"),
        409: err("invalid_state: not pending, or all 5 resends used (resends_remaining: 0)"),
        429: err("resend_too_soon: within 60 s of the last send; rate_limited: a send limit (docs/send-limits.md); Retry-After and error.retry_after say when"),
        503: err("service_unavailable: the email, SMS or WhatsApp message could not be sent (nothing changed)"),
      },
      async handler({ req, params }) {
        const r = await c.verification.resendChallenge({ scope: scopeOf(req), id: params.id });
        const v = toRest(r.verification!);
        return { body: { success: true, message: r.message, expires_at: v.challenge?.expires_at, resends_remaining: r.resendsRemaining, ...v } };
      },
    }),
  ];
}
