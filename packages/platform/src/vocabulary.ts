import type { DescEnum } from "@bufbuild/protobuf";
import { getOption } from "@bufbuild/protobuf";
import {
  asset_types,
  type AssetType as AssetTypeEnum,
  AssetTypeSchema,
  type ChallengeMethod as ChallengeMethodEnum,
  ChallengeMethodSchema,
  type Channel as ChannelEnum,
  ChannelSchema,
  oauth_sign_in,
  type PhoneDelivery as PhoneDeliveryEnum,
  PhoneDeliverySchema,
  type VerificationStatus as VerificationStatusEnum,
  VerificationStatusSchema,
} from "@icv/contracts/gen/icv/vocabulary/v1/vocabulary_pb.ts";

/**
 * Closed vocabularies more than one service names, each listed once. The asset types, channels,
 * verification statuses, challenge methods and phone deliveries are the enums of
 * proto/icv/vocabulary/v1/vocabulary.proto, read here from the generated descriptors; the spec's
 * type/channel table is the `asset_types` option on the Channel values (the verification service's
 * channel families take their channels from it, so its registry is this table). The rest are listed
 * here: the events sent as webhooks, and why a proof is revoked or suspended. The gateway's REST
 * schemas, and so the enums of /api/openapi.json, derive from these lists.
 */

/** The string of a generated enum's member: its name without the enum's prefix, in lower case (TELEGRAM_BOT: telegram_bot). */
type Word<E extends object> = Lowercase<Exclude<keyof E & string, "UNSPECIFIED">>;

/** A proto enum's values as the wire's strings, in the proto's order (the zero value left out). */
const words = <W extends string>(schema: DescEnum): W[] => schema.values.filter((v) => v.number !== 0).map((v) => v.localName.toLowerCase() as W);

/** An asset type, as the wire carries it (the AssetType enum of vocabulary.proto). */
export type AssetType = Word<typeof AssetTypeEnum>;
/** A channel of the type/channel table (the Channel enum of vocabulary.proto). */
export type AssetChannel = Word<typeof ChannelEnum>;

/** The asset types, in the proto's order (the table's). */
export const ASSET_TYPES = words<AssetType>(AssetTypeSchema);

/** The spec's type/channel table: every asset type and the channels a verification of it may use (each Channel value's asset_types option). */
export const CHANNELS_BY_TYPE: Readonly<Record<AssetType, readonly AssetChannel[]>> = (() => {
  const table = {} as Record<AssetType, AssetChannel[]>;
  for (const type of AssetTypeSchema.values) {
    if (type.number === 0) continue;
    const channels = ChannelSchema.values.filter((c) => getOption(c, asset_types).includes(type.number as AssetTypeEnum));
    table[type.localName.toLowerCase() as AssetType] = channels.map((c) => c.localName.toLowerCase() as AssetChannel);
  }
  return table;
})();

/** Every channel of the table once (email is both an email's and a domain's channel), in the table's order. */
export const ASSET_CHANNELS = [...new Set(Object.values(CHANNELS_BY_TYPE).flat())];

/**
 * The channels completed by signing in with their provider (OAuth 2.0: the social channels and
 * coinbase), the Channel values marked oauth_sign_in: the gateway's /oauth/{channel} routes and the
 * verification service's OAuth providers read this list; the channels' own `method` agrees (its registry test).
 */
export const OAUTH_CHANNELS: readonly AssetChannel[] = ChannelSchema.values
  .filter((c) => getOption(c, oauth_sign_in))
  .map((c) => c.localName.toLowerCase() as AssetChannel);

/** A verification's status (the VerificationStatus enum of vocabulary.proto). */
export type VerificationStatus = Word<typeof VerificationStatusEnum>;
export const VERIFICATION_STATUSES = words<VerificationStatus>(VerificationStatusSchema);

/** Which way a phone verification's code travels: inbound (reverse OTP) or outbound (we send it). */
export type PhoneDelivery = Word<typeof PhoneDeliveryEnum>;
export const PHONE_DELIVERIES = words<PhoneDelivery>(PhoneDeliverySchema);

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

/** How an end user completes a challenge (the hosted page's form for it): a channel family's `method` (the ChallengeMethod enum). */
export type ChallengeMethod = Word<typeof ChallengeMethodEnum>;
export const CHALLENGE_METHODS = words<ChallengeMethod>(ChallengeMethodSchema);

/** What a verification request asks the user to do (its hosted page's wording). */
export const ACTION_TYPES = ["verification", "2fa", "login", "custom"] as const;

/** The channels a project's message template is written for (DECISIONS.md, "Projects, message templates and profiles"). */
export const TEMPLATE_CHANNELS = ["email", "sms", "whatsapp", "telegram"] as const;
export type TemplateChannel = (typeof TEMPLATE_CHANNELS)[number];

/** The messages a project's template may replace. */
export const TEMPLATE_TYPES = [
  "verification_request",
  "verification_success",
  "verification_expired",
  "login_request",
  "login_success",
  "2fa_request",
  "2fa_success",
] as const;
export type TemplateType = (typeof TEMPLATE_TYPES)[number];
