/**
 * The channel registry: type → Channel. The only place that picks a channel family; adding a
 * family is one file beside this one and one line in CHANNELS.
 */
import { AppError, MESSAGING_TEST_PLACEHOLDERS, type Config } from "@icv/platform";
import {
  checkRaw,
  type AssetType,
  type CreateOptions,
  type Channel,
  type ChallengeInput,
  type ChallengeSpec,
  type Method,
  type NormalizedIdentifier,
  type PhoneDelivery,
} from "./channel.ts";
import { maskGeneric } from "./shared/mask.ts";
import { account } from "./account.ts";
import { domain } from "./domain.ts";
import { email } from "./email.ts";
import { phone } from "./phone.ts";
import { social } from "./social.ts";
import { telegramBot } from "./telegram-bot.ts";
import { wallet } from "./wallet.ts";

export type {
  AssetType,
  Channel,
  ChallengeInput,
  ChallengeSpec,
  CodeChannel,
  CreateOptions,
  Evidence,
  Method,
  NormalizedIdentifier,
  PhoneDelivery,
} from "./channel.ts";
export { checkProofMethod, domainMethodOf, DOMAIN_METHODS, domainPublication, VALUE_PREFIX, type DomainPublication } from "./domain.ts";
export { OUTBOUND_PHONE_CHANNELS } from "./phone.ts";

const CHANNELS: Record<AssetType, Channel> = {
  phone,
  email,
  domain,
  social,
  wallet,
  account,
  telegram_bot: telegramBot,
};

export const ASSET_TYPES = Object.keys(CHANNELS) as AssetType[];

/** The spec's type/channel compatibility table. */
export const CHANNELS_BY_TYPE = Object.fromEntries(ASSET_TYPES.map((t) => [t, CHANNELS[t].channels])) as Record<AssetType, readonly string[]>;

/** Challenge lifetimes (DECISIONS.md). */
export const TTL_MS = Object.fromEntries(ASSET_TYPES.map((t) => [t, CHANNELS[t].ttlMs])) as Record<AssetType, number>;

/** Placeholders that test-mode deep links use when no provider is configured (documented in the README). */
export const TEST_PLACEHOLDERS = MESSAGING_TEST_PLACEHOLDERS;

/** The channel family of a type (types are checked at the edge: an unknown one is a validation error). */
export function channelOf(type: AssetType): Channel {
  const c = Object.hasOwn(CHANNELS, type) ? CHANNELS[type] : undefined;
  if (!c) throw new AppError("validation_error", "unsupported identifier type");
  return c;
}

export const methodOf = (type: AssetType, channel: string): Method => channelOf(type).method(channel);

/** The environment variables a live verification on this channel needs and lacks ([] when it can run). */
export const missingProvider = (type: AssetType, channel: string, config: Config): string[] => channelOf(type).missingProvider(channel, config);

/** Builds the challenge of a new verification: code, instruction, deep link, message to sign. */
export const buildChallenge = (input: ChallengeInput): ChallengeSpec => channelOf(input.type).challenge(input);

/**
 * Identifier normalization (DECISIONS.md, "Verifications"): `value` is what we store and display,
 * `canonical` what we hash and compare. Invalid input throws `AppError("invalid_identifier")`
 * without echoing the input back.
 */
export function normalizeIdentifier(type: AssetType, channel: string, raw: string): NormalizedIdentifier {
  const input = checkRaw(raw);
  return channelOf(type).normalize(channel, input);
}

/** Masks a normalized `value` for user listings (DECISIONS.md, "Masking"). */
export function maskIdentifier(type: AssetType, value: string): string {
  return Object.hasOwn(CHANNELS, type) ? CHANNELS[type].mask(value) : maskGeneric(value);
}

/** The create body's chain_id, checked by the channel; refused where the channel has no chains. */
export function chainIdOf(type: AssetType, channel: string, requested: number | undefined): number | undefined {
  const c = channelOf(type);
  if (c.chainId) return c.chainId(channel, requested);
  if (requested !== undefined)
    throw new AppError("validation_error", "chain_id is only for ethereum wallets", {
      details: [{ field: "chain_id", message: "ethereum wallets only", code: "invalid" }],
    });
  return undefined;
}

/** The create body's `delivery`, checked: only channels that deliver either way take one. */
export function deliveryOf(type: AssetType, channel: string, delivery: string | undefined): PhoneDelivery | null {
  const c = channelOf(type);
  if (c.delivery) return c.delivery(channel, delivery);
  if (delivery !== undefined)
    throw new AppError("validation_error", "delivery is only for phone verifications", {
      details: [{ field: "delivery", message: "phone only", code: "invalid" }],
    });
  return null;
}

/** Whether the service itself sends this verification's code (email, domain by email, outbound phone). */
export const sendsCode = (type: AssetType, channel: string, delivery: string | null | undefined): boolean =>
  channelOf(type).sendsCode?.(channel, delivery) ?? false;

/** The masked address a code was sent to and what carried it ("email", "SMS", …). */
export function sentNotice(type: AssetType, channel: string, sendTo: string): { to: string; what: string } {
  return channelOf(type).sentNotice?.(channel, sendTo) ?? { to: maskGeneric(sendTo), what: "message" };
}

/** Whether the hosted page shows a pending verification's code (reverse OTP only; a code we send never is). */
export const showsCode = (type: AssetType, channel: string, delivery: string | null): boolean => channelOf(type).showsCode?.(channel, delivery) ?? false;

/**
 * The compared form of an identifier given to check a proof: normalized as at creation, else as
 * a provider attests it (a phone a session captured may be one the strict check refuses);
 * undefined when neither takes it.
 */
export function proofCanonical(type: string, channel: string, raw: string): string | undefined {
  try {
    return normalizeIdentifier(type as AssetType, channel, raw).canonical;
  } catch {
    return Object.hasOwn(CHANNELS, type) ? CHANNELS[type as AssetType].attestedCanonical?.(raw) : undefined;
  }
}

/** The instruction of a phone verification a session proved over `channel`; validation_error for channels sessions do not use. */
export function sessionInstruction(channel: string): string {
  const words = phone.sessionInstruction?.(channel);
  if (!words) throw new AppError("validation_error", "channel must be whatsapp, telegram or sms");
  return words;
}

/** Whether the hosted page can start this channel (it takes no create options such as a DNS host's credentials). */
export const startableOnPage = (type: AssetType, channel: string): boolean => channelOf(type).startableOnPage?.(channel) ?? true;

/** The create options (email_prefix, dns_provider), checked by the channel that takes them; any other channel refuses them. */
export function checkCreateOptions(type: AssetType, channel: string, options: CreateOptions): void {
  const c = channelOf(type);
  if (c.checkOptions) return c.checkOptions(channel, options);
  for (const [field, given] of [
    ["email_prefix", options.emailPrefix],
    ["dns_provider", options.dnsProvider],
  ] as const) {
    if (given !== undefined)
      throw new AppError("validation_error", `${field} is only for domain verifications`, {
        details: [{ field, message: "domain only", code: "invalid" }],
      });
  }
}
