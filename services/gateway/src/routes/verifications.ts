import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { CreateVerificationRequestSchema } from "@icv/contracts/gen/icv/verification/v1/verification_service_pb.ts";
import { AppError, iso, messageOf } from "@icv/platform";
import { z } from "zod";
import { DOMAIN_CHECK_CALL, scopeOf, type Clients } from "../clients.ts";
import { idOf, idParams, timestampParam } from "../input.ts";
import { route, type RouteDef } from "../registry.ts";
import { assetChannel, assetType, channelInput, ErrorBody, HolderKey, jsonObject, PageQuery, Pagination, PhoneDelivery } from "../schemas.ts";
import { ProofFormat, ProofRefBody, projectIdShown, proofBody, timestamp, toPagination, VERIFICATION_STATUSES } from "../schemas.ts";
import { CREATE_VERIFICATION_EXAMPLE } from "../verification-examples.ts";
import { toRest, Verification } from "../verification-schemas.ts";
import { DomainCheck, toRestCheck } from "./domain-check.ts";

export const CreateVerificationBody = z
  .object({
    type: assetType,
    channel: channelInput(64),
    identifier: z.string().min(1).max(320),
    client_metadata: jsonObject.optional(),
    external_user_id: z.string().min(1).max(255).optional(),
    proof_expires_in: z.number().int().min(60).max(31_536_000).optional(),
    delivery: PhoneDelivery.optional().describe(
      "Phone only. inbound (default): the answer shows a code the user sends from the phone; only that provider message completes it. " +
        "outbound (sms, whatsapp): we send a code to the number, never show it, and submit checks it.",
    ),
    email_prefix: z
      .enum(["admin", "administrator", "webmaster", "hostmaster", "postmaster"])
      .optional()
      .describe("Domain on channel email: the mailbox at the domain the code goes to (default admin)"),
    dns_provider: z
      .object({
        name: z.enum(["cloudflare", "digitalocean", "godaddy", "route53"]),
        credentials: z.record(z.string().max(64), z.string().max(1024)),
      })
      .strict()
      .optional()
      .describe(
        "Domain on channel auto (required there): the DNS host's API access. cloudflare: api_token; digitalocean: token; godaddy: key, secret; " +
          "route53: access_key_id, secret_access_key. Used once to write the TXT record, check it and remove it; never stored or logged.",
      ),
    chain_id: z
      .number()
      .int()
      .min(1)
      .max(Number.MAX_SAFE_INTEGER)
      .optional()
      .describe(
        "Ethereum wallets only: the EIP-155 chain id the message to sign names (default 1); smart-contract wallet signatures are checked on that chain",
      ),
    callback_url: z
      .string()
      .min(1)
      .max(2048)
      .optional()
      .describe("This verification's own webhook URL (public http(s) address): its verification.completed webhook goes there too, signed like the others"),
    project_id: idOf("project")
      .optional()
      .describe(
        "The project whose branding and message templates it uses; default: the default project. Another tenant's or environment's project is validation_error",
      ),
    proof_format: ProofFormat.optional(),
    holder_key: HolderKey.optional(),
  })
  .strict()
  .meta({
    id: "CreateVerification",
    example: CREATE_VERIFICATION_EXAMPLE,
  });

const SubmitBody = z
  .object({
    challenge_code: z.string().max(64).optional(),
    code: z
      .string()
      .max(8192)
      .optional()
      .describe(
        "Alias of challenge_code (the reference SDKs send code); give one of the two. By the verification's channel it is also the wallet signature, the bot token or the Kraken API key (with api_secret)",
      ),
    source_identifier: z.string().max(320).optional(),
    signature: z.string().max(8192).optional().describe("Wallets: the signature (smart-contract wallets' ERC-1271/6492 ones may be long)"),
    bot_token: z.string().max(256).optional(),
    api_key: z.string().max(256).optional().describe("kraken: a read-only API key (used once, never stored)"),
    api_secret: z.string().max(512).optional().describe("kraken: the API key's secret (used once, never stored)"),
  })
  .strict()
  .meta({ id: "SubmitChallenge", example: { challenge_code: "X7K2M9" } });

const TestVerifyResponse = z
  .object({
    id: z.string(),
    type: assetType,
    channel: assetChannel,
    status: z.literal("verified"),
    identifier: z.string(),
    verified_at: timestamp,
    proof_token: z.string().describe("The spec's flat field: the same as proof.token"),
    proof_expires_at: timestamp.describe("The spec's flat field: the same as proof.expires_at"),
    identifier_salt: ProofRefBody.shape.identifier_salt,
    proof_sd_jwt_vc: ProofRefBody.shape.sd_jwt_vc,
    proof: ProofRefBody.describe("The proof as GET /api/v1/verifications/{id} answers it"),
    test_mode: z.literal(true),
    project_id: projectIdShown,
  })
  .meta({ id: "TestVerifyResult" });

const ListVerificationsQuery = z
  .object({
    ...PageQuery,
    status: z.enum(VERIFICATION_STATUSES).optional(),
    type: assetType.optional(),
    channel: channelInput(64, "", 0).optional(),
    external_user_id: z.string().max(255).optional(),
    created_after: timestampParam.optional(),
    created_before: timestampParam.optional(),
  })
  .strict();

const CreatedVerification = Verification.extend({
  last_check: DomainCheck.optional().describe("Domain on channel auto: the check the create ran through the provider's API"),
}).meta({ id: "CreatedVerification" });

const VerificationList = z.object({ data: z.array(Verification), pagination: Pagination }).meta({ id: "VerificationList" });

const err = (description: string) => ({ description, schema: ErrorBody });

/** challenge_code, or its alias code (the reference SDKs' name); both at once must agree. */
function challengeCodeOf(body: { challenge_code?: string; code?: string }): string | undefined {
  if (body.challenge_code !== undefined && body.code !== undefined && body.challenge_code !== body.code) {
    throw new AppError("validation_error", "give challenge_code or its alias code, not two different codes", {
      details: [{ field: "code", message: "differs from challenge_code", code: "invalid" }],
    });
  }
  return body.challenge_code ?? body.code;
}

/** The resend answer: the spec's {success, message, expires_at} plus the verification object (GET shape). */
const ResendResult = Verification.extend({
  success: z.literal(true),
  message: z.string().describe("Where the new code went; test keys send nothing"),
  expires_at: z.string().describe("The new challenge expiry (= challenge.expires_at)"),
  resends_remaining: z.number().int().describe("Resends this verification still allows (5 in all)"),
}).meta({ id: "ResendResult" });

export function verificationRoutes(c: Clients): RouteDef[] {
  return [
    route({
      method: "post",
      path: "/api/v1/verifications",
      tag: "Verifications",
      summary: "Create a verification (a challenge for one asset on one channel)",
      description:
        "Starts proving control of one asset (a phone, email, domain, social or exchange account, wallet or Telegram bot) over one channel. The answer carries the challenge the user acts on (a code to send or receive, a message to sign, a DNS record, a sign-in link); the verification then completes by submit, by an inbound message, by a check or by OAuth, and its proof is on the verification once verified. Test keys (pk_test_) send nothing and may complete it with test-verify.",
      auth: "key",
      body: CreateVerificationBody,
      responses: {
        201: { description: "Created; the challenge tells the user what to do", schema: CreatedVerification },
        400: err("validation_error, invalid_identifier, invalid_channel_for_type or channel_unavailable"),
        429: err("rate_limited: the API rate, or a send limit (5 codes per address in 10 min, the tenant's hourly budget); Retry-After says when"),
      },
      async handler({ req, body }) {
        const r = await c.verification.createVerification(
          // the body's members are the request's fields by their proto names; channel auto runs its provider chain before it answers
          { scope: scopeOf(req), ...messageOf(CreateVerificationRequestSchema, body) },
          body.dns_provider ? DOMAIN_CHECK_CALL : undefined,
        );
        const last = toRestCheck(r.domainCheck);
        return { status: 201, body: { ...toRest(r.verification!), ...(last ? { last_check: last } : {}) } };
      },
    }),
    route({
      method: "get",
      path: "/api/v1/verifications",
      tag: "Verifications",
      summary: "List verifications, newest first",
      description:
        "The key's tenant's verifications in the key's environment, filtered by status, type, channel, external_user_id or creation time, a page at a time (page, limit up to 100).",
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
      description:
        "One verification of the key's tenant and environment: its status, challenge (while pending), attempts and, once verified, its proof token and identifier_salt.",
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
      summary: "Submit a challenge code (email, outbound phone, domain by email), a wallet signature, a bot token or a Kraken API key",
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
          challengeCode: challengeCodeOf(body),
          sourceIdentifier: body.source_identifier,
          signature: body.signature,
          botToken: body.bot_token,
          apiKey: body.api_key,
          apiSecret: body.api_secret,
        });
        return { body: toRest(r.verification!) };
      },
    }),
    route({
      method: "post",
      path: "/api/v1/verifications/{id}/test-verify",
      tag: "Verifications",
      summary: "Complete a test verification at once (test keys only)",
      description:
        "Marks a pending test verification verified as if the user had answered, and issues its test proof (signed by the test key set, method test). A live key is test_mode_required; repeating it on a verified verification answers the same proof.",
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
            ...(v.proof?.identifierSalt ? { identifier_salt: v.proof.identifierSalt } : {}),
            ...(v.proof?.sdJwtVc ? { proof_sd_jwt_vc: v.proof.sdJwtVc } : {}),
            ...(v.proof ? { proof: proofBody(v.proof) } : {}),
            test_mode: true,
            ...(v.projectId ? { project_id: v.projectId } : {}),
          },
        };
      },
    }),
    route({
      method: "post",
      path: "/api/v1/verifications/{id}/resend",
      tag: "Verifications",
      summary:
        "Send a new code (email, domain by email, outbound phone): the old one stops working and the challenge gets a new expires_at (at most once per 60 s, 5 times in all)",
      description:
        "For challenges the service sends (email, domain by email, outbound SMS or WhatsApp), a new code replaces the old one. The answer never shows the code; send limits apply as on create.",
      auth: "key",
      params: idParams("verification"),
      responses: {
        200: {
          description: "Sent (test keys send nothing); the verification with its new challenge, never the code",
          schema: ResendResult,
        },
        400: err("resend_not_supported: not a code the service sends (email, outbound phone)"),
        404: err("not_found"),
        409: err("invalid_state: not pending, or all 5 resends used (resends_remaining: 0)"),
        429: err("resend_too_soon: within 60 s of the last send; rate_limited: a send limit (docs/send-limits.md); Retry-After and error.retry_after say when"),
        503: err("service_unavailable: the email, SMS or WhatsApp message could not be sent (nothing changed)"),
      },
      async handler({ req, params }) {
        const r = await c.verification.resendChallenge({ scope: scopeOf(req), id: params.id });
        const v = toRest(r.verification!);
        return {
          body: { success: true, message: r.message, expires_at: v.challenge?.expires_at, resends_remaining: r.resendsRemaining, ...v },
        };
      },
    }),
  ];
}
