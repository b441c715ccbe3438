import { z } from "zod";

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

export const Challenge = z
  .object({
    code: z.string().length(6).optional().describe("Only on creation, and only for phone channels (the user sends it)"),
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
    created_after: z.iso.datetime({ offset: true }).optional(),
    created_before: z.iso.datetime({ offset: true }).optional(),
  })
  .strict();

export const VerificationList = z.object({ data: z.array(Verification), pagination: Pagination }).meta({ id: "VerificationList" });

export const IdParams = z.object({ id: z.string().min(1).max(64) });

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
        test_mode: z.boolean().describe("Issued with a test key: the user's control was not checked"),
      }),
    }),
    z.object({
      valid: z.literal(false),
      reason: z.enum(["expired", "revoked", "invalid_signature", "malformed", "unknown_key", "identifier_mismatch"]),
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
    signature: z.string().describe("Compact JWS (RS256, kid from the JWKS) over {revoked, generated_at}"),
  })
  .meta({ id: "RevocationList" });

export const RevokedQuery = z.object({ since: z.iso.datetime({ offset: true }).optional() }).strict();

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
    verification_request_id: z.string().max(64).optional(),
  })
  .strict();
