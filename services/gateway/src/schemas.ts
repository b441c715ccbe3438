import { z } from "zod";
import { PROOF_METHODS } from "@icv/platform";
import { idOf, idParams, timestampParam } from "./input.ts";

/** REST shapes (request and response); they also generate /api/openapi.json. */

export const ASSET_TYPES = ["phone", "email", "domain", "social", "wallet", "account", "telegram_bot"] as const;
export const VERIFICATION_STATUSES = ["pending", "verified", "failed", "expired", "revoked"] as const;
export const REVOKE_REASONS = ["user_request", "fraud", "key_compromise", "asset_transferred", "other"] as const;

const timestamp = z.string().describe("ISO 8601 UTC timestamp with milliseconds");

export const ErrorBody = z
  .object({
    error: z.object({
      code: z.string(),
      message: z.string(),
      details: z.array(z.object({ field: z.string(), message: z.string(), code: z.string() })).optional(),
      request_id: z.string(),
    }),
  })
  .meta({ id: "Error" });

export const Pagination = z
  .object({ page: z.number().int(), limit: z.number().int(), total: z.number().int(), pages: z.number().int(), hasMore: z.boolean() })
  .meta({ id: "Pagination" });

/** The REST pagination block of an RPC's page info. */
export const toPagination = (p: { page: number; limit: number; total: number; pages: number; hasMore: boolean }) => ({
  page: p.page,
  limit: p.limit,
  total: p.total,
  pages: p.pages,
  hasMore: p.hasMore,
});

const intParam = (name: string, min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, `${name} must be a whole number`)
    .transform(Number)
    .pipe(z.number().int().min(min, `${name} must be at least ${min}`).max(max, `${name} must be at most ${max}`));

export const PageQuery = {
  page: intParam("page", 1, 1_000_000).optional(),
  limit: intParam("limit", 1, 100).optional(),
};

const jsonObject = z.record(z.string(), z.unknown());

const PhoneDelivery = z.enum(["inbound", "outbound"]);

export const Challenge = z
  .object({
    code: z.string().length(6).optional().describe("Only on creation, and only for phone with delivery inbound (the user sends it from the phone)"),
    expires_at: timestamp,
    instruction: z.string(),
    deep_link: z.string().optional(),
    message: z.string().optional().describe("Wallets: the exact text to sign. Domains: the TXT record / file value"),
  })
  .meta({ id: "Challenge" });

export const Verification = z
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

export const CreateVerificationBody = z
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

export const SubmitBody = z
  .object({
    challenge_code: z.string().max(64).optional(),
    source_identifier: z.string().max(320).optional(),
    signature: z.string().max(1024).optional(),
    bot_token: z.string().max(256).optional(),
  })
  .strict()
  .meta({ id: "SubmitChallenge" });

export const TestVerifyResponse = z
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

export const ListVerificationsQuery = z
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

export const VerificationList = z.object({ data: z.array(Verification), pagination: Pagination }).meta({ id: "VerificationList" });

export const IdParams = idParams("verification", "verificationRequest", "session", "authSession", "webhookDelivery");

export const ValidateBody = z
  .object({ proof_token: z.string().min(1).max(8192), identifier: z.string().min(1).max(320).optional() })
  .strict()
  .meta({ id: "ValidateProof" });

export const ValidateResponse = z
  .union([
    z.object({
      valid: z.literal(true),
      verification: z.object({
        id: z.string(),
        type: z.string(),
        channel: z.string(),
        verified_at: timestamp,
        expires_at: timestamp,
        test_mode: z.boolean().describe("A test proof (test key set): the user's control was not checked. Only ever valid for a test key"),
        method: z.enum(PROOF_METHODS).optional().describe("How control was shown (the proof's method claim); absent only on proofs issued before every proof carried one"),
      }),
    }),
    z.object({
      valid: z.literal(false),
      reason: z
        .enum(["expired", "revoked", "invalid_signature", "malformed", "unknown_key", "identifier_mismatch", "test_proof"])
        .describe("test_proof: a test proof validated with a live key (test proofs never pass for live ones)"),
      message: z.string(),
    }),
  ])
  .meta({ id: "ValidateProofResult" });

export const ProofStatus = z
  .object({
    proof_id: z.string(),
    status: z.enum(["active", "revoked", "expired"]),
    is_valid: z.boolean(),
    is_revoked: z.boolean(),
    revoked_at: timestamp.nullable(),
    revoked_reason: z.string().nullable(),
    expires_at: timestamp,
    is_expired: z.boolean(),
  })
  .meta({ id: "ProofStatus" });

export const RevokeBody = z.object({ reason: z.enum(REVOKE_REASONS) }).strict().meta({ id: "RevokeProof" });

export const RevokeResponse = z
  .object({ success: z.literal(true), verification_id: z.string(), status: z.literal("revoked"), revoked_at: timestamp })
  .meta({ id: "RevokeProofResult" });

export const RevocationList = z
  .object({
    revoked: z.array(z.object({ proof_id: z.string(), revoked_at: timestamp, reason: z.string() })),
    generated_at: timestamp,
    signature: z.string().describe("Compact JWS (RS256) over {revoked, generated_at}; its kid is in jwks.json (live list) or jwks-test.json (env=test)"),
  })
  .meta({ id: "RevocationList" });

export const RevokedQuery = z
  .object({
    since: timestampParam.optional(),
    env: z.enum(["live", "test"]).optional().describe("live (default): live proofs, signed by a key of /.well-known/jwks.json; test: test proofs, signed by a key of /.well-known/jwks-test.json"),
  })
  .strict();

export const Jwks = z
  .object({
    keys: z.array(z.object({ kty: z.literal("RSA"), n: z.string(), e: z.string(), alg: z.literal("RS256"), use: z.literal("sig"), kid: z.string() })),
  })
  .meta({ id: "JWKS" });

export const Health = z
  .object({
    status: z.enum(["healthy", "degraded", "unhealthy"]),
    timestamp,
    services: z.record(z.string(), z.enum(["up", "down", "disabled"])),
  })
  .meta({ id: "Health" });

export const ApiInfo = z.object({ name: z.string(), version: z.string(), description: z.string() }).meta({ id: "ApiInfo" });

// --- webhook deliveries ---

export const DELIVERY_STATUSES = ["pending", "delivered", "failed"] as const;

export const WebhookDelivery = z
  .object({
    id: z.string(),
    verification_request_id: z.string().nullable().describe("The verification request the event belongs to (request events)"),
    event_type: z.string(),
    url: z.string(),
    status: z.enum(DELIVERY_STATUSES),
    attempts: z.number().int(),
    max_attempts: z.number().int(),
    response_status: z.number().int().nullable().describe("HTTP status of the last attempt's response; null before one came"),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: "WebhookDelivery" });

export const WebhookAttempt = z
  .object({
    attempt: z.number().int(),
    at: timestamp,
    status: z.number().int().optional().describe("HTTP status, when a response came"),
    error: z.string().optional(),
    duration_ms: z.number().int(),
  })
  .meta({ id: "WebhookAttempt" });

export const WebhookDeliveryDetail = WebhookDelivery.extend({
  request_payload: jsonObject.describe("The body sent (parsed); the raw bytes are what X-Service-Signature signs"),
  request_headers: z.record(z.string(), z.string()).describe("Headers of the last attempt (signatures included)"),
  response_body: z.string().nullable().describe("First 4 KB of the last response"),
  error_message: z.string().nullable(),
  last_attempt_at: timestamp.nullable(),
  next_retry_at: timestamp.nullable().describe("When the next attempt is due (pending only)"),
  attempt_log: z.array(WebhookAttempt),
}).meta({ id: "WebhookDeliveryDetail" });

export const WebhookDeliveryList = z.object({ data: z.array(WebhookDelivery), pagination: Pagination }).meta({ id: "WebhookDeliveryList" });

export const WebhookDeliveryStats = z
  .object({
    total: z.number().int(),
    delivered: z.number().int(),
    failed: z.number().int(),
    pending: z.number().int(),
    success_rate: z.number().describe("delivered / total × 100, two decimals; 0 when total is 0"),
  })
  .meta({ id: "WebhookDeliveryStats" });

export const WebhookDeliveryRetryResult = z
  .object({ success: z.literal(true), delivery: WebhookDeliveryDetail })
  .meta({ id: "WebhookDeliveryRetryResult" });

export const ListWebhookDeliveriesQuery = z
  .object({
    ...PageQuery,
    status: z.enum(DELIVERY_STATUSES).optional(),
    event_type: z.string().max(64).optional(),
    verification_request_id: idOf("verificationRequest").optional(),
  })
  .strict();

// --- verified users ---

const VERIFIED_USERS_NOTE =
  "Which verifications count: those carrying this external_user_id whose status is verified (pending, failed, expired and revoked ones do not). " +
  "The detail view also lists the user's revoked verifications, with their status. Identifiers are masked.";

export const VerifiedUserVerification = z
  .object({
    id: z.string(),
    type: z.enum(ASSET_TYPES),
    channel: z.string(),
    identifier: z.string().describe("Masked: +3706***9199, j***e@example.com, 0x12***abcd"),
    verified_at: timestamp,
  })
  .meta({ id: "VerifiedUserVerification" });

export const VerifiedUserVerificationDetail = VerifiedUserVerification.extend({
  status: z.enum(["verified", "revoked"]),
  has_proof: z.boolean().describe("Verified, not revoked, and the proof has not expired"),
  proof_expires_at: timestamp.nullable(),
  created_at: timestamp,
}).meta({ id: "VerifiedUserVerificationDetail" });

const verifiedUserFields = {
  external_user_id: z.string(),
  verification_count: z.number().int().describe("Verified verifications (revoked ones not counted)"),
  types_verified: z.array(z.enum(ASSET_TYPES)).describe("Distinct types of the verified verifications, sorted"),
  first_verified_at: timestamp,
  last_verified_at: timestamp,
};

export const VerifiedUser = z
  .object({ ...verifiedUserFields, verifications: z.array(VerifiedUserVerification).describe("The verified ones, newest first") })
  .describe(VERIFIED_USERS_NOTE)
  .meta({ id: "VerifiedUser" });

export const VerifiedUserDetail = z
  .object({ ...verifiedUserFields, verifications: z.array(VerifiedUserVerificationDetail).describe("The verified and the revoked ones, newest verified_at first") })
  .describe(VERIFIED_USERS_NOTE)
  .meta({ id: "VerifiedUserDetail" });

export const VerifiedUserList = z.object({ data: z.array(VerifiedUser), pagination: Pagination }).meta({ id: "VerifiedUserList" });

export const VerifiedUsersQuery = z.object({ ...PageQuery }).strict();

export const ExternalUserParams = z.object({ externalUserId: z.string().min(1).max(255) });

// ---- verification requests ----

export const REQUEST_STATUSES = ["pending", "partial", "completed", "expired", "cancelled"] as const;
export const REQUEST_ASSET_STATUSES = ["pending", "in_progress", "verified", "failed", "expired"] as const;
export const ACTION_TYPES = ["verification", "2fa", "login", "custom"] as const;

const ActionContext = z
  .object({ title: z.string().min(1).max(200).optional(), description: z.string().min(1).max(1000).optional() })
  .strict()
  .describe("Shown to the end user on the hosted page");

export const RequestAssetInput = z
  .object({
    type: z.enum(ASSET_TYPES),
    identifier: z.string().min(1).max(320).nullable().optional().describe("null or absent: the end user gives it on the hosted page"),
    channel: z.string().min(1).max(64).optional().describe("Preferred channel; with an identifier, the verification is created at once"),
    allowed_channels: z.array(z.string().min(1).max(64)).min(1).max(10).optional().describe("Restricts the channels the user may choose"),
    required: z.boolean().optional().describe("Default true; at least one asset must be required"),
  })
  .strict()
  .meta({ id: "RequestAssetInput" });

export const CreateVerificationRequestBody = z
  .object({
    assets: z.array(RequestAssetInput).min(1).max(10),
    reference_id: z.string().min(1).max(255).optional().describe("Your tracking id (see GET /verification-requests/by-reference/{referenceId})"),
    action_type: z.enum(ACTION_TYPES).optional().describe("Default verification"),
    action_context: ActionContext.optional(),
    redirect_url: z.string().min(1).max(2048).optional().describe("Where the hosted page sends the user when done"),
    callback_url: z.string().min(1).max(2048).optional().describe("Receives the request's webhooks (public http(s) address)"),
    expires_in: z.number().int().min(60).max(604_800).optional().describe("Seconds; default 86400 (24 h), at most 604800 (7 days)"),
    partial_ok: z.boolean().optional().describe("Send verification_request.partial when some required assets are verified"),
    external_user_id: z.string().min(1).max(255).optional().describe("Your user id; given to the request's verifications"),
    client_metadata: jsonObject.optional(),
    max_proof_age: z
      .number().int().min(60).max(31_536_000).optional()
      .describe("Smart reuse: seconds; existing proofs must have been verified at most this long before the request was created (60 to 31536000; default: any age)"),
  })
  .strict()
  .meta({ id: "CreateVerificationRequest" });

export const RequestAsset = z
  .object({
    index: z.number().int(),
    type: z.string(),
    identifier: z.string().nullable(),
    channel: z.string().nullable(),
    allowed_channels: z.array(z.string()).nullable(),
    required: z.boolean(),
    status: z.enum(REQUEST_ASSET_STATUSES),
    verification_id: z.string().nullable(),
  })
  .meta({ id: "RequestAsset" });

export const VerificationRequest = z
  .object({
    id: z.string(),
    status: z.enum(REQUEST_STATUSES),
    reference_id: z.string().nullable(),
    assets: z.array(RequestAsset),
    verification_url: z.string().describe("The hosted page; its #fragment token lets the end user act on this request until it expires"),
    created_at: timestamp,
    expires_at: timestamp,
    action_type: z.enum(ACTION_TYPES),
    action_context: z.object({ title: z.string().nullable(), description: z.string().nullable() }),
    redirect_url: z.string().nullable(),
    callback_url: z.string().nullable(),
    partial_ok: z.boolean(),
    external_user_id: z.string().nullable(),
    client_metadata: jsonObject.optional(),
    completed_at: timestamp.optional(),
    cancelled_at: timestamp.optional(),
    test_mode: z.boolean(),
    max_proof_age: z.number().int().optional().describe("Smart reuse: seconds, when the request bounds the age of reused proofs"),
  })
  .meta({ id: "VerificationRequest" });

export const VerificationRequestList = z.object({ data: z.array(VerificationRequest), pagination: Pagination }).meta({ id: "VerificationRequestList" });

export const ListVerificationRequestsQuery = z
  .object({ ...PageQuery, status: z.enum(REQUEST_STATUSES).optional(), reference_id: z.string().min(1).max(255).optional() })
  .strict();

export const ReferenceParams = z.object({ referenceId: z.string().min(1).max(255) });

export const CancelVerificationRequestResponse = z
  .object({ success: z.literal(true), status: z.literal("cancelled") })
  .meta({ id: "CancelVerificationRequestResult" });

// ---- test mode: GET /api/v1/test/messages ----

export const TestMessagesQuery = z
  .object({ ...PageQuery, verification_id: z.string().regex(/^ver_[0-9A-HJKMNP-TV-Z]{26}$/, "verification_id must be a verification id (ver_…)").optional() })
  .strict();

export const TestMessage = z
  .object({
    id: z.string(),
    verification_id: z.string().optional().describe("The test verification the message belongs to"),
    session_id: z.string().optional().describe("Or the test session (sess_… or auth_…) it belongs to"),
    channel: z.string(),
    direction: z.enum(["outbound", "inbound"]).describe("outbound: we would have sent it; inbound: we expect the user to send it"),
    from: z.string().optional().describe("inbound: the user's number"),
    to: z.string().describe("outbound: the email address; inbound: our number or @bot"),
    subject: z.string().optional(),
    text: z.string().describe("The message text; it contains the code (test mode only)"),
    created_at: z.string(),
  })
  .meta({ id: "TestMessage" });

export const TestMessageList = z.object({ data: z.array(TestMessage), pagination: Pagination }).meta({ id: "TestMessageList" });

// ---- phone-first sessions and auth sessions ----

export const SESSION_CHANNELS = ["telegram", "whatsapp"] as const;
export const AUTH_SESSION_TYPES = ["2fa", "login", "recovery"] as const;

export const CreateSessionBody = z
  .object({ channel: z.enum(SESSION_CHANNELS), client_metadata: jsonObject.optional() })
  .strict()
  .meta({ id: "CreateSession" });

export const CreateAuthSessionBody = z
  .object({
    channel: z.enum(SESSION_CHANNELS),
    phone_number: z.string().min(1).max(64).describe("The number that must answer, E.164"),
    type: z.enum(AUTH_SESSION_TYPES).optional().describe("Default 2fa"),
    client_metadata: jsonObject.optional(),
  })
  .strict()
  .meta({ id: "CreateAuthSession" });

export const SessionTestVerifyBody = z
  .object({ phone_number: z.string().min(1).max(64).optional().describe("The number that answers; default +15555550100 (phone-first) or the session's number (auth)") })
  .strict()
  .meta({ id: "SessionTestVerify" });

const sessionProof = z.object({ token: z.string(), expires_at: timestamp });

export const PhoneSession = z
  .object({
    id: z.string().describe("sess_…"),
    channel: z.enum(SESSION_CHANNELS),
    status: z.enum(["pending", "verified", "expired"]),
    deep_link: z.string().optional().describe("While pending: opens the bot (t.me/<bot>?start=<token>) or WhatsApp with the message pre-filled"),
    qr_code: z.string().optional().describe("While pending: the URL of a PNG QR code of deep_link"),
    expires_at: timestamp,
    instructions: z.string(),
    phone_number: z.string().optional().describe("Once verified: the number the user answered from (E.164)"),
    verified_at: timestamp.optional(),
    verification_id: z.string().optional().describe("Once verified: the phone verification made for it"),
    proof: sessionProof.optional(),
    client_metadata: z.record(z.string(), z.unknown()).optional(),
    created_at: timestamp,
    test_mode: z.boolean(),
  })
  .meta({ id: "PhoneSession" });

export const AuthSession = z
  .object({
    id: z.string().describe("auth_…"),
    type: z.enum(AUTH_SESSION_TYPES),
    channel: z.enum(SESSION_CHANNELS),
    status: z.enum(["pending", "verified", "failed", "expired"]).describe("failed: a different phone answered"),
    deep_link: z.string().optional(),
    qr_code: z.string().optional().describe("While pending: a data:image/png;base64 URI of deep_link"),
    expires_at: timestamp,
    instructions: z.string(),
    phone_number: z.string().describe("The number that must answer (E.164)"),
    verified_at: timestamp.optional(),
    failed_at: timestamp.optional(),
    verification_id: z.string().optional(),
    proof: sessionProof.optional().describe("Once verified: a proof that lives 10 minutes"),
    client_metadata: z.record(z.string(), z.unknown()).optional(),
    created_at: timestamp,
    test_mode: z.boolean(),
  })
  .meta({ id: "AuthSession" });

export const SessionQrQuery = z.object({ sig: z.string().min(1).max(64) }).strict();
