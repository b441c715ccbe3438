/** The registry: generic input rules, masking, the type/channel table, TTLs, providers and methods. */
import { describe, it, expect } from "vitest";
import { parseConfig } from "@icv/platform";
import { AppError } from "@icv/platform/errors.ts";
import {
  maskIdentifier,
  normalizeIdentifier,
  buildChallenge,
  CHANNELS_BY_TYPE,
  TTL_MS,
  methodOf,
  missingProvider,
  type AssetType,
} from "../../src/channels/index.ts";
import { deliveryOf, proofCanonical, sendsCode, sentNotice, sessionInstruction, showsCode } from "../../src/channels/index.ts";
import { errorOf, expectInvalid, NOW, bare, configured, ETH, challenge } from "./helpers.ts";

// ---------------------------------------------------------------------------------------------
// generic input rules

describe("normalizeIdentifier: generic input rules", () => {
  const cases: Array<[string, AssetType, string, string]> = [
    ["empty string", "email", "email", ""],
    ["only spaces", "email", "email", "   "],
    ["over 320 characters", "account", "coinbase", "a".repeat(321)],
    ["NUL byte", "social", "github", "john\u0000doe"],
    ["newline", "email", "email", "user@example.com\n"],
    ["tab", "domain", "dns", "\texample.com"],
    ["DEL", "account", "kraken", "abc\u007fdef"],
    ["C1 control", "social", "x", "john\u0085"],
    ["escape in phone", "phone", "sms", "+14155552671\u001b"],
  ];
  it.each(cases)("rejects %s", (_name, type, channel, raw) => {
    expectInvalid(type, channel, raw);
  });

  it("accepts exactly 320 characters before trimming", () => {
    const raw = `${" ".repeat(300)}ABCDEFGHIJ${" ".repeat(10)}`;
    expect(raw.length).toBe(320);
    expect(normalizeIdentifier("account", "coinbase", raw)).toEqual({ value: "ABCDEFGHIJ", canonical: "ABCDEFGHIJ" });
  });

  it("never echoes the raw input in the message", () => {
    const err = expectInvalid("phone", "sms", "+1 SECRET-VALUE 555");
    expect(err.message).not.toContain("SECRET");
  });

  it("rejects an unknown wallet channel as invalid_channel_for_type", () => {
    const err = errorOf(() => normalizeIdentifier("wallet", "dogecoin", "D8vFz4p1L37jdg47HXKtSHA5uYLYxbGgPD"));
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe("invalid_channel_for_type");
  });
});

// ---------------------------------------------------------------------------------------------
// phone

// masking

describe("maskIdentifier", () => {
  const cases: Array<[AssetType, string, string]> = [
    ["phone", "+37069199199", "+3706***9199"],
    ["phone", "+14155552671", "+1415***2671"],
    ["phone", "+8613800138000", "+8613***8000"],
    ["phone", "+4930901820", "+4930***1820"],
    ["phone", "+6834002", "+68***02"],
    ["email", "john.doe@example.com", "j***e@example.com"],
    ["email", "j@example.com", "j***@example.com"],
    ["email", "ab@x.io", "a***b@x.io"],
    ["email", "john.doe+tag@example.com", "j***g@example.com"],
    ["account", "user.name@example.com", "u***e@example.com"],
    ["account", "ACCT-123456789", "ACCT***6789"],
    ["account", "ABC123", "A***"],
    ["domain", "example.com", "exam***.com"],
    ["domain", "abc.de", "a***"],
    ["domain", "abcde.io", "a***"],
    ["domain", "abcdef.io", "abcd***f.io"],
    ["wallet", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "0x5a***eAed"],
    ["wallet", "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", "1A1z***vfNa"],
    ["social", "johndoe", "j***"],
    ["social", "john.doe_99", "john***e_99"],
    ["telegram_bot", "@MyTestBot", "@MyT***tBot"],
    ["telegram_bot", "@mybot", "@***"],
  ];
  it.each(cases)("masks %s %s as %s", (type, value, expected) => {
    expect(maskIdentifier(type, value)).toBe(expected);
  });

  it("keeps 4 + 4 for anything longer than 8 and first char for 8 or fewer", () => {
    expect(maskIdentifier("social", "abcdefgh")).toBe("a***");
    expect(maskIdentifier("social", "abcdefghi")).toBe("abcd***fghi");
  });

  it("masks a normalized value end to end", () => {
    const phone = normalizeIdentifier("phone", "sms", "+370 691 99199");
    expect(maskIdentifier("phone", phone.value)).toBe("+3706***9199");
    const email = normalizeIdentifier("email", "email", "John.Doe@Example.COM");
    expect(maskIdentifier("email", email.value)).toBe("j***e@example.com");
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
      const c = buildChallenge({
        id: "ver_01JABCDEFGHJKMNPQRSTVWXYZ0",
        type: "phone",
        channel,
        identifier: "+37069199199",
        env: "live",
        now: NOW,
        config: configured,
        delivery: "outbound",
      });
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

  it("social and coinbase: a single-use OAuth start link on the public base, its secret kept only as the code HMAC", () => {
    const c = challenge("social", "github", "octocat", { config: configured });
    expect(c.deepLink).toMatch(/^https:\/\/verify\.example\.com\/oauth\/github\/start\?t=ver_01JABCDEFGHJKMNPQRSTVWXYZ0\.[0-9a-f]{64}$/);
    expect(c.deepLink!.endsWith(`.${c.code}`)).toBe(true);
    expect(c.showCode).toBe(false);
    expect(challenge("social", "github", "octocat").code).not.toBe(c.code);
    expect(challenge("account", "coinbase", "a@example.com").deepLink).toMatch(/\/oauth\/coinbase\/start\?t=ver_/);
  });

  it("kraken: no link, an instruction to make a read-only API key", () => {
    const c = challenge("account", "kraken", "AA88 N84G WOAK NMOI");
    expect(c.deepLink).toBeUndefined();
    expect(c.code).toBeUndefined();
    expect(c.instruction).toContain("read-only API key");
  });

  it("telegram_bot: an instruction and nothing to send", () => {
    const c = challenge("telegram_bot", "telegram_bot_token", "@acme_bot");
    expect(c).toMatchObject({ showCode: false });
    expect(c.code).toBeUndefined();
    expect(c.deepLink).toBeUndefined();
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
    // auto takes the DNS host's API credentials in the create body: nothing to configure
    ["domain", "auto", []],
    ["domain", "dns", []],
    ["domain", "http", []],
    ["social", "github", ["OAUTH_GITHUB_CLIENT_ID", "OAUTH_GITHUB_CLIENT_SECRET"]],
    ["social", "x", ["OAUTH_X_CLIENT_ID", "OAUTH_X_CLIENT_SECRET"]],
    ["account", "coinbase", ["OAUTH_COINBASE_CLIENT_ID", "OAUTH_COINBASE_CLIENT_SECRET"]],
    ["account", "kraken", []],
    ["wallet", "ethereum", []],
    ["wallet", "bitcoin", []],
    ["telegram_bot", "telegram_bot_token", []],
  ];
  it.each(cases)("%s/%s without providers lacks %j", (type, channel, missing) => {
    expect(missingProvider(type, channel, bare)).toEqual(missing);
  });

  it("telegram in polling mode (local development) needs no webhook secret", () => {
    expect(missingProvider("phone", "telegram", parseConfig({ TELEGRAM_MODE: "polling", TELEGRAM_BOT_USERNAME: "acme_verify_bot" }))).toEqual([
      "TELEGRAM_BOT_TOKEN",
    ]);
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
      for (const channel of CHANNELS_BY_TYPE[type].filter((c) => c !== "kraken")) {
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
    expect(methodOf("account", "coinbase")).toBe("oauth");
    expect(methodOf("account", "kraken")).toBe("api_key");
  });
});

// ---------------------------------------------------------------------------------------------
// the decisions the use cases ask the registry (resend, the hosted page, proof checks, sessions)

describe("who sends the code, and what the page may show", () => {
  const all = (Object.entries(CHANNELS_BY_TYPE) as [AssetType, readonly string[]][]).flatMap(([t, cs]) => cs.map((c) => [t, c] as const));

  it("the service sends the code of email, domain by email and outbound phone only", () => {
    // every verification that can exist: type, channel and a delivery the create accepts
    const made = all.flatMap(([t, c]) =>
      (["inbound", "outbound", undefined] as const).flatMap((d) => (errorOf(() => deliveryOf(t, c, d)) ? [] : [[t, c, deliveryOf(t, c, d)] as const])),
    );
    expect(made.filter(([t, c, d]) => sendsCode(t, c, d)).map((x) => x.join("/"))).toEqual([
      "phone/whatsapp/outbound",
      "phone/sms/outbound",
      "email/email/",
      "domain/email/",
    ]);
  });

  it("the page shows a reverse-OTP phone code, never an outbound one or another type's", () => {
    expect(all.filter(([t, c]) => showsCode(t, c, "inbound")).map(([t, c]) => `${t}/${c}`)).toEqual([
      "phone/whatsapp",
      "phone/telegram",
      "phone/sms",
      "phone/viber",
    ]);
    expect(all.filter(([t, c]) => showsCode(t, c, "outbound"))).toEqual([]);
  });

  it("a resend says where the code went, masked, and what carried it", () => {
    expect(sentNotice("email", "email", "john.doe@example.com")).toEqual({ to: "j***e@example.com", what: "email" });
    expect(sentNotice("domain", "email", "admin@example.com")).toEqual({ to: "a***n@example.com", what: "email" });
    expect(sentNotice("phone", "sms", "+37069199199")).toEqual({ to: "+3706***9199", what: "SMS" });
    expect(sentNotice("phone", "whatsapp", "+37069199199")).toEqual({ to: "+3706***9199", what: "WhatsApp message" });
  });
});

describe("proofCanonical", () => {
  it("is the normalized identifier, as at creation", () => {
    expect(proofCanonical("email", "email", "John.Doe@Example.COM")).toBe("john.doe@example.com");
    expect(proofCanonical("phone", "sms", "+370 691 99199")).toBe("+37069199199");
  });

  it("takes a possible phone number a provider attested that the strict check refuses; nothing else", () => {
    // +1 555 01xx: possible, not valid (a range libphonenumber's validity data does not hold)
    expect(() => normalizeIdentifier("phone", "telegram", "+1 555 010 0000")).toThrow();
    expect(proofCanonical("phone", "telegram", "+1 (555) 010-0000")).toBe("+15550100000");
    expect(proofCanonical("email", "email", "not an email")).toBeUndefined();
    expect(proofCanonical("nonsense", "x", "+15550100000")).toBeUndefined();
  });
});

describe("sessionInstruction", () => {
  it("names the bot or the number for the channels sessions answer over, and refuses the others", () => {
    expect(sessionInstruction("telegram")).toBe("Confirmed by a message from this number to our Telegram bot.");
    expect(sessionInstruction("whatsapp")).toBe("Confirmed by a message from this number to our WhatsApp number.");
    expect(sessionInstruction("sms")).toBe("Confirmed by a text message from this number to our SMS number.");
    expect(sessionInstruction("viber")).toBe("Confirmed by this number's contact, shared with our Viber bot.");
    for (const c of ["signal", "email", "__proto__", "toString"]) expect(errorOf(() => sessionInstruction(c))).toMatchObject({ code: "validation_error" });
  });
});
