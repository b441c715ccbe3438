/**
 * Closed vocabularies more than one service names, each listed once: the spec's type/channel table
 * (the verification service's channel families take their channels from it, so its registry is this
 * table), the events sent as webhooks, and why a proof is revoked or suspended. The gateway's REST
 * schemas, and so the enums of /api/openapi.json, derive from these lists.
 */

/** The spec's type/channel table: every asset type and the channels a verification of it may use. */
export const CHANNELS_BY_TYPE = {
  phone: ["whatsapp", "telegram", "sms", "viber"],
  email: ["email"],
  domain: ["dns", "http", "email", "auto"],
  social: ["github", "google", "facebook", "x", "linkedin", "instagram", "youtube", "tiktok"],
  wallet: ["ethereum", "solana", "bitcoin"],
  account: ["coinbase", "kraken"],
  telegram_bot: ["telegram_bot_token"],
} as const satisfies Record<string, readonly string[]>;

export type AssetType = keyof typeof CHANNELS_BY_TYPE;
export type AssetChannel = (typeof CHANNELS_BY_TYPE)[AssetType][number];

/** The asset types, in the table's order. */
export const ASSET_TYPES = Object.keys(CHANNELS_BY_TYPE) as AssetType[];

/** Every channel of the table once (email is both an email's and a domain's channel), in the table's order. */
export const ASSET_CHANNELS = [...new Set(Object.values(CHANNELS_BY_TYPE).flat())] as AssetChannel[];

/** The event types sent as webhooks (the spec's table); every other event stays inside. */
export const WEBHOOK_EVENT_TYPES = [
  "verification.completed",
  "verification.suspended",
  "verification.reinstated",
  "verification_request.completed",
  "verification_request.partial",
  "verification_request.expired",
  "verification.redacted",
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** The event a tenant sends to its own endpoint to try it (console, "send a test event"). */
export const TEST_WEBHOOK_EVENT = "webhook.test";

/** Why a proof is revoked (a revoke without a reason: other). */
export const REVOKE_REASONS = ["user_request", "fraud", "key_compromise", "asset_transferred", "other"] as const;

/** Why a verified domain's control could not be confirmed again (its proof suspended until a check passes). */
export const SUSPEND_REASONS = ["record_missing", "record_mismatch", "unreachable", "policy_refused"] as const;

/** How an end user completes a challenge (the hosted page's form for it): a channel family's `method`. */
export const CHALLENGE_METHODS = ["code", "signature", "bot_token", "domain_check", "oauth", "api_key"] as const;
export type ChallengeMethod = (typeof CHALLENGE_METHODS)[number];

/** What a verification request asks the user to do (its hosted page's wording). */
export const ACTION_TYPES = ["verification", "2fa", "login", "custom"] as const;
