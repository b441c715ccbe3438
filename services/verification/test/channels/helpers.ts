/** Shared by the channel tests: identifier helpers (was identifiers.test.ts) and challenge fixtures (was channels.test.ts). */
import { createHash } from "node:crypto";
import { getAddress } from "viem";
import { expect } from "vitest";
import { base58, bech32, bech32m } from "@scure/base";
import { parseConfig, type Config, type EnvName } from "@icv/platform";
import { AppError } from "@icv/platform/errors.ts";
import type { AssetType, CreateBody, CreateOptions, PendingVerification } from "../../src/channels/channel.ts";
import { CHANNEL_CONFIG, channelFor } from "../../src/channels/registry.ts";
import { parseWith } from "../../src/channels/shared/parse.ts";
import { codeHmac } from "../../src/channels/shared/secrets.ts";

// ---------------------------------------------------------------------------------------------
// helpers

export function errorOf(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    return e;
  }
  return undefined;
}

/** An identifier normalized by the channel of type/channel (the generic input rules included). */
export const normalize = (type: AssetType, channel: string, raw: string) => channelFor(type, channel).normalize(raw);

export function expectInvalid(type: AssetType, channel: string, raw: string): AppError {
  const err = errorOf(() => normalize(type, channel, raw));
  expect(err, `expected ${type}/${channel} ${JSON.stringify(raw)} to be rejected`).toBeInstanceOf(AppError);
  const appErr = err as AppError;
  expect(appErr.code).toBe("invalid_identifier");
  expect(appErr.message.length).toBeGreaterThan(0);
  return appErr;
}

export const sha256d = (data: Uint8Array): Uint8Array => createHash("sha256").update(createHash("sha256").update(data).digest()).digest();

/** version byte + payload + first 4 bytes of double SHA-256, in base58. */
export function base58check(version: number, payload: Uint8Array): string {
  const body = new Uint8Array([version, ...payload]);
  const sum = sha256d(body).subarray(0, 4);
  return base58.encode(new Uint8Array([...body, ...sum]));
}

/** Deterministic test bytes: 0, step, 2*step, ... (mod 256) offset by `start`. */
export function bytes(length: number, start = 1, step = 7): Uint8Array {
  return Uint8Array.from({ length }, (_, i) => (start + i * step) & 0xff);
}

export function segwit(hrp: string, version: number, program: Uint8Array, coder: typeof bech32 = version === 0 ? bech32 : bech32m): string {
  return coder.encode(hrp, [version, ...coder.toWords(program)]);
}

/** Replace the character at `index` with a different one from `alphabet`. */
export function tamper(s: string, index: number, alphabet: string): string {
  const c = s[index];
  const replacement = alphabet[(alphabet.indexOf(c) + 1) % alphabet.length];
  return s.slice(0, index) + replacement + s.slice(index + 1);
}

export const BASE58_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
export const BECH32_ALPHABET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l";

export const hash160 = bytes(20, 0x3c, 13);

export const NOW = new Date("2026-02-04T10:00:00.000Z");
export const bare = parseConfig({ PUBLIC_BASE_URL: "https://verify.example.com" }, CHANNEL_CONFIG);
export const configured = parseConfig(
  {
    PUBLIC_BASE_URL: "https://verify.example.com",
    WHATSAPP_PHONE_NUMBER: "+15551234567",
    TELEGRAM_BOT_USERNAME: "acme_verify_bot",
    SMS_PHONE_NUMBER: "15557654321",
    WHATSAPP_PHONE_NUMBER_ID: "1098765432",
    WHATSAPP_ACCESS_TOKEN: "EAAG-test-access-token",
    WHATSAPP_APP_SECRET: "whatsapp-app-secret-1",
    TELEGRAM_BOT_TOKEN: "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0",
    TELEGRAM_WEBHOOK_SECRET: "telegram-webhook-secret",
    TWILIO_ACCOUNT_SID: "AC0123456789abcdef0123456789abcdef",
    TWILIO_AUTH_TOKEN: "twilio-auth-token-1",
    SMTP_URL: "smtp://127.0.0.1:2525",
    OAUTH_GITHUB_CLIENT_ID: "gh-client",
    OAUTH_GITHUB_CLIENT_SECRET: "gh-secret",
    OAUTH_COINBASE_CLIENT_ID: "cb-client",
    OAUTH_COINBASE_CLIENT_SECRET: "cb-secret",
  },
  CHANNEL_CONFIG,
);
export const ETH = getAddress("0x52908400098527886e0f7030069857d2e4169ee7");

export const challenge = (type: AssetType, channel: string, identifier: string, opts: { env?: EnvName; config?: Config; options?: CreateOptions } = {}) =>
  channelFor(type, channel).challenge({
    id: "ver_01JABCDEFGHJKMNPQRSTVWXYZ0",
    identifier,
    env: opts.env ?? "test",
    now: NOW,
    config: opts.config ?? bare,
    options: opts.options ?? {},
  });

/** The create options a channel makes of `body`, or the AppError code and details it refuses them with. */
export function options(type: AssetType, channel: string, body: CreateBody): CreateOptions | { refused: string; message: string; details?: unknown } {
  try {
    return parseWith(channelFor(type, channel).options, body);
  } catch (e) {
    const err = e as AppError;
    return { refused: err.code, message: err.message, details: err.details };
  }
}

/** The option fields a channel takes: each given alone, those it does not refuse. */
export function takenOptions(type: AssetType, channel: string): string[] {
  const samples: CreateBody = {
    delivery: "inbound",
    email_prefix: "admin",
    dns_provider: { name: "cloudflare", credentials: { api_token: "t" } },
    chain_id: 1,
  };
  return Object.entries(samples)
    .filter(([field, value]) => !("refused" in options(type, channel, { [field]: value })))
    .map(([field]) => field);
}

// ---------------------------------------------------------------------------------------------
// evidence (Channel.complete)

export const CTX = { hmacKey: "test-hmac-key-0123456789abcdef", config: parseConfig({ PUBLIC_BASE_URL: "https://verify.example.com" }, CHANNEL_CONFIG) };

/** A pending verification as Channel.complete sees it; `code` is stored as its HMAC. */
export function pending(v: {
  type: string;
  channel: string;
  identifier: string;
  canonical?: string;
  code?: string;
  delivery?: string;
  message?: string;
}): PendingVerification {
  const id = "ver_01JABCDEFGHJKMNPQRSTVWXYZ0";
  return {
    id,
    type: v.type,
    channel: v.channel,
    identifier: v.identifier,
    identifier_canonical: v.canonical ?? v.identifier,
    code_hmac: v.code ? codeHmac(CTX.hmacKey, id, v.code) : null,
    challenge_message: v.message ?? null,
    delivery: v.delivery ?? null,
  };
}

/** The AppError code a promise (or a throwing call) ends with. */
export async function rejection(fn: () => Promise<unknown>): Promise<string | undefined> {
  try {
    await fn();
  } catch (e) {
    return (e as AppError).code;
  }
  return undefined;
}
