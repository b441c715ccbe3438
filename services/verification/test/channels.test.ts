import { getAddress } from "viem";
import { parseSiweMessage, validateSiweMessage } from "viem/siwe";
import { describe, expect, it } from "vitest";
import { parseConfig, type Config, type EnvName } from "@icv/platform";
import { CHANNELS_BY_TYPE, TEST_PLACEHOLDERS, TTL_MS, buildChallenge, methodOf, missingProvider } from "../src/channels.ts";
import type { AssetType } from "../src/identifiers.ts";

const NOW = new Date("2026-02-04T10:00:00.000Z");
const bare = parseConfig({ PUBLIC_BASE_URL: "https://verify.example.com" });
const configured = parseConfig({
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
  DNS_PROVIDER_API: "cloudflare",
  OAUTH_GITHUB_CLIENT_ID: "gh-client",
  OAUTH_COINBASE_CLIENT_ID: "cb-client",
});
const ETH = getAddress("0x52908400098527886e0f7030069857d2e4169ee7");

const challenge = (type: AssetType, channel: string, identifier: string, opts: { env?: EnvName; config?: Config } = {}) =>
  buildChallenge({ id: "ver_01JABCDEFGHJKMNPQRSTVWXYZ0", type, channel, identifier, env: opts.env ?? "test", now: NOW, config: opts.config ?? bare });

describe("phone deep links", () => {
  it("whatsapp: https://wa.me/<digits>?text=CODE, code shown", () => {
    const c = challenge("phone", "whatsapp", "+37069199199", { env: "live", config: configured });
    expect(c.code).toMatch(/^[A-Z0-9]{6}$/);
    expect(c.showCode).toBe(true);
    expect(c.deepLink).toBe(`https://wa.me/15551234567?text=${c.code}`);
    expect(c.instruction).toContain(c.code!);
    expect(c.instruction).toContain("+15551234567");
  });

  it("telegram: https://t.me/<bot>?start=CODE", () => {
    const c = challenge("phone", "telegram", "+37069199199", { env: "live", config: configured });
    expect(c.deepLink).toBe(`https://t.me/acme_verify_bot?start=${c.code}`);
    expect(c.showCode).toBe(true);
  });

  it("sms: sms:+<number>?body=CODE, with the + added when configured without it", () => {
    const c = challenge("phone", "sms", "+37069199199", { env: "live", config: configured });
    expect(c.deepLink).toBe(`sms:+15557654321?body=${c.code}`);
  });

  it("test keys without providers get the documented placeholders", () => {
    expect(TEST_PLACEHOLDERS).toEqual({ telegramBot: "icv_test_bot", whatsappNumber: "+15550001000", smsNumber: "+15550002000" });
    const wa = challenge("phone", "whatsapp", "+37069199199");
    expect(wa.deepLink).toBe(`https://wa.me/15550001000?text=${wa.code}`);
    const tg = challenge("phone", "telegram", "+37069199199");
    expect(tg.deepLink).toBe(`https://t.me/icv_test_bot?start=${tg.code}`);
    const sms = challenge("phone", "sms", "+37069199199");
    expect(sms.deepLink).toBe(`sms:+15550002000?body=${sms.code}`);
  });

  it("a fresh code for every challenge", () => {
    const codes = new Set(Array.from({ length: 50 }, () => challenge("phone", "sms", "+37069199199").code));
    expect(codes.size).toBe(50);
  });
});

describe("service-sent codes, domains, bots, OAuth", () => {
  it("email: a code that is never shown and no link", () => {
    const c = challenge("email", "email", "john.doe@example.com", { config: configured });
    expect(c.code).toMatch(/^[A-Z0-9]{6}$/);
    expect(c.showCode).toBe(false);
    expect(c.deepLink).toBeUndefined();
    expect(c.instruction).not.toContain(c.code!);
  });

  it("outbound phone (sms, whatsapp): a code sent to the number, never shown, no deep link", () => {
    for (const channel of ["sms", "whatsapp"]) {
      const c = buildChallenge({ id: "ver_01JABCDEFGHJKMNPQRSTVWXYZ0", type: "phone", channel, identifier: "+37069199199", env: "live", now: NOW, config: configured, delivery: "outbound" });
      expect(c.code).toMatch(/^[A-Z0-9]{6}$/);
      expect(c).toMatchObject({ showCode: false, sendTo: "+37069199199" });
      expect(c.deepLink).toBeUndefined();
      expect(c.instruction).toMatch(channel === "sms" ? /by SMS/ : /by WhatsApp/);
      expect(c.instruction).not.toContain(c.code!);
      expect(c.expiresAt.getTime() - NOW.getTime()).toBe(TTL_MS.phone);
    }
  });

  it("domain by email: a hidden code sent to the domain", () => {
    const c = challenge("domain", "email", "example.com", { config: configured });
    expect(c.showCode).toBe(false);
    expect(c.code).toMatch(/^[A-Z0-9]{6}$/);
    expect(c.instruction).toContain("example.com");
  });

  it("domain dns and http: the icv-verify=<token> value and where to put it, no code", () => {
    const dns = challenge("domain", "dns", "example.com");
    expect(dns.code).toBeUndefined();
    expect(dns.message).toMatch(/^icv-verify=[A-Za-z0-9_-]{43}$/);
    expect(dns.instruction).toContain("_icv-challenge.example.com");
    expect(dns.instruction).toContain(dns.message!);
    const http = challenge("domain", "http", "example.com");
    expect(http.message).toMatch(/^icv-verify=[A-Za-z0-9_-]{43}$/);
    expect(http.message).not.toBe(dns.message);
    expect(http.instruction).toContain("http://example.com/.well-known/icv-verify.txt");
  });

  it("social and account: the OAuth start URL on the public base", () => {
    const c = challenge("social", "github", "octocat", { config: configured });
    expect(c.deepLink).toBe("https://verify.example.com/oauth/github/start?verification_id=ver_01JABCDEFGHJKMNPQRSTVWXYZ0");
    expect(c.code).toBeUndefined();
    expect(challenge("account", "kraken", "someone").deepLink).toBe("https://verify.example.com/oauth/kraken/start?verification_id=ver_01JABCDEFGHJKMNPQRSTVWXYZ0");
  });

  it("telegram_bot: an instruction and nothing to send", () => {
    const c = challenge("telegram_bot", "telegram_bot_token", "@acme_bot");
    expect(c).toMatchObject({ showCode: false });
    expect(c.code).toBeUndefined();
    expect(c.deepLink).toBeUndefined();
  });
});

describe("wallet messages", () => {
  it("ethereum: an EIP-4361 message (host line, address line, Nonce ≥ 8 alphanumerics, Issued At)", () => {
    const c = challenge("wallet", "ethereum", ETH);
    const lines = c.message!.split("\n");
    expect(lines[0]).toBe("verify.example.com wants you to sign in with your Ethereum account:");
    expect(lines[1]).toBe(ETH);
    expect(lines[2]).toBe("");
    expect(c.message).toMatch(/\nNonce: [A-Za-z0-9]{8,}\n/);
    expect(lines).toContain(`Issued At: ${NOW.toISOString()}`);
    expect(lines).toContain("URI: https://verify.example.com");
    expect(lines).toContain("Version: 1");
    expect(c.code).toBeUndefined();
    expect(c.instruction).toContain(ETH);
  });

  it("ethereum: viem's EIP-4361 parser reads every field back, and it validates for its domain and time", () => {
    const c = challenge("wallet", "ethereum", ETH);
    const m = parseSiweMessage(c.message!);
    expect(m).toMatchObject({ domain: "verify.example.com", address: ETH, uri: "https://verify.example.com", version: "1", chainId: 1 });
    expect(m.nonce).toMatch(/^[A-Za-z0-9]{8,}$/);
    expect(m.issuedAt).toEqual(NOW);
    expect(m.expirationTime).toEqual(new Date(NOW.getTime() + 10 * 60_000));
    expect(validateSiweMessage({ message: m, domain: "verify.example.com", address: ETH, time: new Date(NOW.getTime() + 60_000) })).toBe(true);
    expect(validateSiweMessage({ message: m, domain: "verify.example.com", time: new Date(NOW.getTime() + 11 * 60_000) })).toBe(false);
  });

  it("a new nonce for every message", () => {
    const a = parseSiweMessage(challenge("wallet", "ethereum", ETH).message!).nonce;
    const b = parseSiweMessage(challenge("wallet", "ethereum", ETH).message!).nonce;
    expect(a).not.toBe(b);
  });

  it("solana and bitcoin: a signed statement naming the address, with a nonce", () => {
    const sol = challenge("wallet", "solana", "7EcDhSYGxXyscszYEp35KHN8vvw3svAuLKTzXwCFLtV");
    expect(sol.message!.split("\n")[1]).toBe("7EcDhSYGxXyscszYEp35KHN8vvw3svAuLKTzXwCFLtV");
    expect(sol.message).toMatch(/\nNonce: [A-Za-z0-9]{16}\n/);
    expect(sol.message).toContain(`Issued At: ${NOW.toISOString()}`);
  });
});

describe("TTL per type (DECISIONS.md)", () => {
  const MIN = 60_000;
  const cases: [AssetType, string, string, number][] = [
    ["phone", "sms", "+37069199199", 10 * MIN],
    ["email", "email", "a@example.com", 30 * MIN],
    ["domain", "dns", "example.com", 24 * 60 * MIN],
    ["social", "github", "octocat", 10 * MIN],
    ["wallet", "ethereum", ETH, 10 * MIN],
    ["account", "coinbase", "someone", 10 * MIN],
    ["telegram_bot", "telegram_bot_token", "@acme_bot", 10 * MIN],
  ];
  it.each(cases)("%s challenges expire after the decided time", (type, channel, identifier, ttl) => {
    expect(TTL_MS[type]).toBe(ttl);
    expect(challenge(type, channel, identifier).expiresAt.getTime() - NOW.getTime()).toBe(ttl);
  });
});

describe("missingProvider", () => {
  const cases: [AssetType, string, string[]][] = [
    ["phone", "whatsapp", ["WHATSAPP_PHONE_NUMBER", "WHATSAPP_PHONE_NUMBER_ID", "WHATSAPP_ACCESS_TOKEN", "WHATSAPP_APP_SECRET"]],
    ["phone", "telegram", ["TELEGRAM_BOT_USERNAME", "TELEGRAM_BOT_TOKEN", "TELEGRAM_WEBHOOK_SECRET"]],
    ["phone", "sms", ["SMS_PHONE_NUMBER", "TWILIO_ACCOUNT_SID", "TWILIO_AUTH_TOKEN"]],
    ["email", "email", ["SMTP_URL"]],
    ["domain", "email", ["SMTP_URL"]],
    ["domain", "auto", ["DNS_PROVIDER_API"]],
    ["domain", "dns", []],
    ["domain", "http", []],
    ["social", "github", ["OAUTH_GITHUB_CLIENT_ID"]],
    ["social", "x", ["OAUTH_X_CLIENT_ID"]],
    ["account", "coinbase", ["OAUTH_COINBASE_CLIENT_ID"]],
    ["wallet", "ethereum", []],
    ["wallet", "bitcoin", []],
    ["telegram_bot", "telegram_bot_token", []],
  ];
  it.each(cases)("%s/%s without providers lacks %j", (type, channel, missing) => {
    expect(missingProvider(type, channel, bare)).toEqual(missing);
  });

  it("telegram in polling mode (local development) needs no webhook secret", () => {
    expect(missingProvider("phone", "telegram", parseConfig({ TELEGRAM_MODE: "polling", TELEGRAM_BOT_USERNAME: "acme_verify_bot" }))).toEqual(["TELEGRAM_BOT_TOKEN"]);
  });

  it("lacks nothing once the providers are configured", () => {
    for (const [type, channel] of [
      ["phone", "whatsapp"],
      ["phone", "telegram"],
      ["phone", "sms"],
      ["email", "email"],
      ["domain", "auto"],
      ["social", "github"],
      ["account", "coinbase"],
    ] as [AssetType, string][]) {
      expect(missingProvider(type, channel, configured), `${type}/${channel}`).toEqual([]);
    }
  });

  it("names a provider for every OAuth channel of the compatibility table", () => {
    for (const type of ["social", "account"] as AssetType[]) {
      for (const channel of CHANNELS_BY_TYPE[type]) {
        const [name] = missingProvider(type, channel, bare);
        expect(name).toBe(`OAUTH_${channel.toUpperCase()}_CLIENT_ID`);
        expect(Object.keys(parseConfig({ [name]: "x" })), `${name} is a known configuration variable`).toContain(name);
      }
    }
  });
});

describe("methodOf", () => {
  it("tells how each kind of verification is completed", () => {
    expect(methodOf("phone", "sms")).toBe("code");
    expect(methodOf("email", "email")).toBe("code");
    expect(methodOf("domain", "email")).toBe("code");
    expect(methodOf("domain", "dns")).toBe("domain_check");
    expect(methodOf("domain", "http")).toBe("domain_check");
    expect(methodOf("wallet", "ethereum")).toBe("signature");
    expect(methodOf("telegram_bot", "telegram_bot_token")).toBe("bot_token");
    expect(methodOf("social", "github")).toBe("oauth");
    expect(methodOf("account", "kraken")).toBe("oauth");
  });
});
