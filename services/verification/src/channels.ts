import { MESSAGING_TEST_PLACEHOLDERS, messagingAddress, missingMessagingProvider, type Config, type EnvName, type MessagingChannel } from "@icv/platform";
import type { AssetType } from "./identifiers.ts";
import { generateCode, nonce, publicToken } from "./challenge.ts";

/** The spec's type/channel compatibility table. */
export const CHANNELS_BY_TYPE: Record<AssetType, readonly string[]> = {
  phone: ["whatsapp", "telegram", "sms"],
  email: ["email"],
  domain: ["dns", "http", "email", "auto"],
  social: ["github", "google", "facebook", "x", "linkedin", "instagram", "youtube", "tiktok"],
  wallet: ["ethereum", "solana", "bitcoin"],
  account: ["coinbase", "kraken"],
  telegram_bot: ["telegram_bot_token"],
};
export const ASSET_TYPES = Object.keys(CHANNELS_BY_TYPE) as AssetType[];

/** How the user completes a verification: a code, a wallet signature, a bot token, a DNS/HTTP check or OAuth. */
export type Method = "code" | "signature" | "bot_token" | "domain_check" | "oauth";

const MIN = 60_000;
/** Challenge lifetimes (DECISIONS.md). */
export const TTL_MS: Record<AssetType, number> = {
  phone: 10 * MIN,
  email: 30 * MIN,
  domain: 24 * 60 * MIN,
  social: 10 * MIN,
  wallet: 10 * MIN,
  account: 10 * MIN,
  telegram_bot: 10 * MIN,
};

/** Placeholders that test-mode deep links use when no provider is configured (documented in the README). */
export const TEST_PLACEHOLDERS = MESSAGING_TEST_PLACEHOLDERS;

export function methodOf(type: AssetType, channel: string): Method {
  if (type === "wallet") return "signature";
  if (type === "telegram_bot") return "bot_token";
  if (type === "social" || type === "account") return "oauth";
  if (type === "domain" && channel !== "email") return "domain_check";
  return "code";
}

/**
 * The environment variables a live verification on this channel needs and lacks ([] when it can
 * run). Test keys never need providers: nothing is sent in test mode.
 */
export function missingProvider(type: AssetType, channel: string, config: Config): string[] {
  const need = (...names: string[]) => names.filter((n) => !(config as unknown as Record<string, unknown>)[n]);
  if (type === "phone") return missingMessagingProvider(channel as MessagingChannel, config);
  if (channel === "email") return need("SMTP_URL");
  if (type === "domain" && channel === "auto") return need("DNS_PROVIDER_API");
  if (type === "social" || type === "account") return need(`OAUTH_${channel.toUpperCase()}_CLIENT_ID`);
  return [];
}

export interface ChallengeSpec {
  /** The plain code; stored only as an HMAC. */
  code?: string;
  /** Whether the create response may show the code (user-initiated channels only). */
  showCode: boolean;
  instruction: string;
  deepLink?: string;
  /** Wallets: the exact text to sign. Domains: the record / file value. */
  message?: string;
  /** Where the service must deliver the code itself (email channels, outbound phone). */
  sendTo?: string;
  expiresAt: Date;
}

export interface ChallengeInput {
  id: string;
  type: AssetType;
  channel: string;
  identifier: string;
  env: EnvName;
  now: Date;
  config: Config;
  /** Phone: "inbound" (default; the user sends the shown code) or "outbound" (we send a code to the number). */
  delivery?: PhoneDelivery;
}

/** How a phone code travels (DECISIONS.md, Verifications): from the phone to us, or from us to the phone. */
export type PhoneDelivery = "inbound" | "outbound";
/** The phone channels a code can be sent over (Twilio Messages, WhatsApp template); Telegram cannot message a number first. */
export const OUTBOUND_PHONE_CHANNELS: readonly string[] = ["sms", "whatsapp"];


/** Builds the challenge of a new verification: code, instruction, deep link, message to sign. */
export function buildChallenge(input: ChallengeInput): ChallengeSpec {
  const { id, type, channel, identifier, env, now, config } = input;
  const expiresAt = new Date(now.getTime() + TTL_MS[type]);
  const test = env === "test";
  const base = config.publicBaseUrl;

  if (type === "phone" && input.delivery === "outbound") {
    const code = generateCode();
    const by = channel === "whatsapp" ? "WhatsApp" : "SMS";
    return { code, showCode: false, sendTo: identifier, expiresAt, instruction: `We sent a 6-character code by ${by} to this number. Enter it to confirm.` };
  }

  if (type === "phone") {
    const code = generateCode();
    const to = messagingAddress(channel as MessagingChannel, config);
    if (channel === "whatsapp") {
      return {
        code,
        showCode: true,
        expiresAt,
        instruction: `Send the code ${code} from your WhatsApp account to ${to}.`,
        deepLink: `https://wa.me/${to.slice(1)}?text=${encodeURIComponent(code)}`,
      };
    }
    if (channel === "telegram") {
      return {
        code,
        showCode: true,
        expiresAt,
        instruction: `Open ${to} in Telegram, press Start and share your phone number (or send the code ${code}).`,
        deepLink: `https://t.me/${to.slice(1)}?start=${code}`,
      };
    }
    return { code, showCode: true, expiresAt, instruction: `Text the code ${code} to ${to} from this phone.`, deepLink: `sms:${to}?body=${code}` };
  }

  if (channel === "email") {
    const code = generateCode();
    const sendTo = type === "domain" ? `admin@${identifier}` : identifier;
    const to = type === "domain" ? `an administrative address at ${identifier}` : "your email address";
    return { code, showCode: false, sendTo, expiresAt, instruction: `We sent a 6-character code to ${to}. Enter it to confirm.` };
  }

  if (type === "domain") {
    const value = `icv-verify=${publicToken()}`;
    if (channel === "http") {
      return { showCode: false, expiresAt, message: value, instruction: `Serve a file at http://${identifier}/.well-known/icv-verify.txt containing exactly: ${value}` };
    }
    if (channel === "auto") {
      return { showCode: false, expiresAt, message: value, instruction: `We publish the TXT record through your DNS provider's API, check it and remove it.` };
    }
    return { showCode: false, expiresAt, message: value, instruction: `Add a TXT record at _icv-challenge.${identifier} with the value ${value}` };
  }

  if (type === "wallet") {
    const message = walletMessage(channel, identifier, base, now, expiresAt);
    return { showCode: false, expiresAt, message, instruction: `Sign the message with the ${channel} wallet ${identifier} and submit the signature.` };
  }

  if (type === "telegram_bot") {
    return {
      showCode: false,
      expiresAt,
      instruction: `Submit the token of ${identifier} (from @BotFather). We call getMe once to confirm it belongs to that bot and never store it.`,
    };
  }

  // social and account: OAuth
  return {
    showCode: false,
    expiresAt,
    instruction: `Sign in with ${channel} as ${identifier} to confirm you control the account.`,
    deepLink: `${base}/oauth/${channel}/start?verification_id=${encodeURIComponent(id)}`,
  };
}

/** EIP-4361 (Sign-In with Ethereum) for ethereum; a plain signed statement for the others. */
function walletMessage(channel: string, address: string, base: string, now: Date, expires: Date): string {
  const host = new URL(base).host;
  const statement = "Sign this message to prove you control this wallet. It costs nothing and sends no transaction.";
  if (channel === "ethereum") {
    return [
      `${host} wants you to sign in with your Ethereum account:`,
      address,
      "",
      statement,
      "",
      `URI: ${base}`,
      "Version: 1",
      "Chain ID: 1",
      `Nonce: ${nonce()}`,
      `Issued At: ${now.toISOString()}`,
      `Expiration Time: ${expires.toISOString()}`,
    ].join("\n");
  }
  return [`${host} asks you to prove control of the ${channel} address:`, address, "", statement, "", `Nonce: ${nonce()}`, `Issued At: ${now.toISOString()}`].join(
    "\n",
  );
}
