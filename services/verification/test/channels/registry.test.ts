/** The registry: the type/channel table, and what every channel answers alike (input rules, masks, TTLs, providers, methods). */
import { describe, it, expect } from "vitest";
import { CHANNELS_BY_TYPE, OAUTH_CHANNELS, parseConfig } from "@icv/platform";
import { AppError } from "@icv/platform/errors.ts";
import type { AssetType } from "../../src/channels/channel.ts";
import { CHANNEL_CONFIG, channelFor, CHANNELS } from "../../src/channels/registry.ts";
import { channelTableSource } from "../../../../scripts/generate-channels.ts";
import { errorOf, expectInvalid, normalize, NOW, bare, configured, ETH, challenge, options } from "./helpers.ts";

const ALL = (Object.entries(CHANNELS_BY_TYPE) as [AssetType, readonly string[]][]).flatMap(([t, cs]) => cs.map((c) => [t, c] as const));
const missingProvider = (type: AssetType, channel: string, config: typeof bare) => channelFor(type, channel).missingProvider(config);

describe("the table", () => {
  it("holds every type/channel of the spec's table and nothing else", () => {
    expect(Object.fromEntries(Object.entries(CHANNELS).map(([t, row]) => [t, Object.keys(row)]))).toEqual(CHANNELS_BY_TYPE);
    for (const [t, c] of ALL) expect(channelFor(t, c)).toMatchObject({ type: t, channel: c });
  });

  it("is generated from the vocabulary: a new Channel value names its file <type>/<channel>.ts, and a repeated name is imported under its type", () => {
    const source = channelTableSource({ ...CHANNELS_BY_TYPE, phone: [...CHANNELS_BY_TYPE.phone, "signal"] });
    expect(source).toContain('import { signal } from "./phone/signal.ts";');
    expect(source).toContain("  phone: { whatsapp, telegram, sms, viber, signal },");
    expect(source).toContain('import { email as domainEmail } from "./domain/email.ts";');
    expect(source).toContain("  domain: { dns, http, email: domainEmail, auto },");
    expect(channelTableSource(CHANNELS_BY_TYPE)).not.toContain("signal");
  });

  it("completes by OAuth sign-in exactly the channels vocabulary.proto marks oauth_sign_in (the gateway's /oauth/{channel} list)", () => {
    expect(OAUTH_CHANNELS).toEqual(["github", "google", "facebook", "x", "linkedin", "instagram", "youtube", "tiktok", "coinbase"]);
    expect(ALL.filter(([t, c]) => channelFor(t, c).method === "oauth").map(([, c]) => c)).toEqual(OAUTH_CHANNELS);
  });

  it("channelFor refuses an unknown pair as validation_error, without reading the prototype", () => {
    for (const [t, c] of [
      ["wallet", "dogecoin"],
      ["phone", "signal"],
      ["phone", "email"],
      ["nonsense", "x"],
      ["__proto__", "toString"],
      ["phone", "__proto__"],
      ["email", "constructor"],
    ]) {
      const err = errorOf(() => channelFor(t, c));
      expect(err, `${t}/${c}`).toBeInstanceOf(AppError);
      expect((err as AppError).code).toBe("validation_error");
    }
  });
});

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
    expect(normalize("account", "coinbase", raw)).toEqual({ value: "ABCDEFGHIJ", canonical: "ABCDEFGHIJ" });
  });

  it("never echoes the raw input in the message", () => {
    const err = expectInvalid("phone", "sms", "+1 SECRET-VALUE 555");
    expect(err.message).not.toContain("SECRET");
  });
});

// ---------------------------------------------------------------------------------------------
// phone

// masking

/** How every channel of a type masks a value (all alike). */
function maskIdentifier(type: AssetType, value: string): string {
  const masks = new Set(CHANNELS_BY_TYPE[type].map((c) => channelFor(type, c).mask(value)));
  expect(masks.size, `${type} channels mask ${value} alike`).toBe(1);
  return [...masks][0];
}

describe("masking", () => {
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
    const phone = normalize("phone", "sms", "+370 691 99199");
    expect(maskIdentifier("phone", phone.value)).toBe("+3706***9199");
    const email = normalize("email", "email", "John.Doe@Example.COM");
    expect(maskIdentifier("email", email.value)).toBe("j***e@example.com");
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
    for (const c of CHANNELS_BY_TYPE[type]) expect(channelFor(type, c).ttlMs, `${type}/${c}`).toBe(ttl);
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
        expect(Object.keys(parseConfig({ [name]: "x" }, CHANNEL_CONFIG)), `${name} is a known configuration variable`).toContain(name);
      }
    }
  });
});

const methodOf = (type: AssetType, channel: string) => channelFor(type, channel).method;

describe("method", () => {
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
  const all = ALL;
  const deliveryOf = (t: AssetType, c: string, d: string | undefined) => {
    const o = options(t, c, { delivery: d });
    if ("refused" in o) throw new AppError("validation_error", o.message);
    return o.delivery ?? null;
  };
  const sendsCode = (t: AssetType, c: string, d: string | null) => channelFor(t, c).sends?.code(d) ?? false;
  const showsCode = (t: AssetType, c: string, d: string | null) => channelFor(t, c).form.step === "send_code" && d !== "outbound";
  const sentNotice = (t: AssetType, c: string, to: string) => channelFor(t, c).sends?.notice(to);

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

describe("the phone channels' session words and attested numbers", () => {
  it("names the bot or the number for the channels sessions answer over; other channels have none", () => {
    const words = (c: string) => channelFor("phone", c).phone?.sessionInstruction;
    expect(words("telegram")).toBe("Confirmed by a message from this number to our Telegram bot.");
    expect(words("whatsapp")).toBe("Confirmed by a message from this number to our WhatsApp number.");
    expect(words("sms")).toBe("Confirmed by a text message from this number to our SMS number.");
    expect(words("viber")).toBe("Confirmed by this number's contact, shared with our Viber bot.");
    for (const c of ["signal", "email", "__proto__", "toString"]) expect(errorOf(() => channelFor("phone", c))).toMatchObject({ code: "validation_error" });
    expect(ALL.filter(([t, c]) => channelFor(t, c).phone).map(([t, c]) => `${t}/${c}`)).toEqual([
      "phone/whatsapp",
      "phone/telegram",
      "phone/sms",
      "phone/viber",
    ]);
  });
});

describe("hosted forms", () => {
  it("every channel names itself and its inputs for the page; only phones offer a delivery", () => {
    for (const [t, c] of ALL) {
      const f = channelFor(t, c).form;
      expect(f.name.length, `${t}/${c}`).toBeGreaterThan(0);
      for (const field of f.fields) expect(field.label.length, `${t}/${c} ${field.name}`).toBeGreaterThan(0);
      expect(f.deliveries.length > 0, `${t}/${c}`).toBe(t === "phone");
    }
    expect(ALL.filter(([t, c]) => channelFor(t, c).form.startable === false).map(([t, c]) => `${t}/${c}`)).toEqual(["domain/auto"]);
  });
});
