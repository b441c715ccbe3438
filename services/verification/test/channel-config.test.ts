/**
 * The channels' configuration keys (SMTP, the OAuth apps, Kraken's API): declared by the channel
 * files, composed by the registry into CHANNEL_CONFIG, validated with the platform's keys where the
 * verification service runs, and read back by the channels.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { CHANNELS_BY_TYPE, CONFIG_VARIABLES, parseConfig } from "@icv/platform";
import type { AssetType } from "../src/channels/channel.ts";
import { CHANNEL_CONFIG, channelFor } from "../src/channels/registry.ts";
import { providerSettings } from "../src/oauth/providers.ts";
import { smtpMailer } from "../src/sending/mailer.ts";
import { challenge, CTX, pending } from "./channels/helpers.ts";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const dataDir = mkdtempSync(path.join(tmpdir(), "icv-channel-config-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** Starts an entry point with `env` and answers its exit code and output (a bad configuration ends it at once). */
const start = (entry: string, env: Record<string, string>) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      ["--import", "tsx", path.join(ROOT, entry)],
      { cwd: ROOT, env: { PATH: process.env.PATH ?? "", DATA_DIR: dataDir, LOG_LEVEL: "silent", ...env }, timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr }),
    );
  });

const ALL = (Object.entries(CHANNELS_BY_TYPE) as [AssetType, readonly string[]][]).flatMap(([t, cs]) => cs.map((c) => channelFor(t, c)));

describe("CHANNEL_CONFIG", () => {
  it("holds the keys the channels declare, none of them the platform's, each key one schema", () => {
    expect(Object.keys(CHANNEL_CONFIG)).toEqual(
      expect.arrayContaining(["SMTP_URL", "SMTP_FROM", "KRAKEN_API_URL", "OAUTH_GITHUB_TOKEN_URL", "OAUTH_COINBASE_CLIENT_ID"]),
    );
    expect(Object.keys(CHANNEL_CONFIG).filter((k) => CONFIG_VARIABLES.includes(k))).toEqual([]);
    for (const c of ALL) for (const [key, schema] of Object.entries(c.config ?? {})) expect(CHANNEL_CONFIG[key], `${c.type}/${c.channel} ${key}`).toBe(schema);
    // the email channels share the SMTP keys; every OAuth channel has its app's five keys
    expect(Object.keys(channelFor("domain", "email").config ?? {})).toEqual(Object.keys(channelFor("email", "email").config ?? {}));
    for (const c of ALL.filter((c) => c.method === "oauth")) {
      const up = `OAUTH_${c.channel.toUpperCase()}`;
      expect(Object.keys(c.config ?? {}).sort(), c.channel).toEqual(
        ["AUTHORIZATION_URL", "CLIENT_ID", "CLIENT_SECRET", "TOKEN_URL", "USERINFO_URL"].map((k) => `${up}_${k}`),
      );
    }
  });

  it("refuses a bad value naming the key, and a provider endpoint over plain http unless ALLOW_PRIVATE_TARGETS", () => {
    expect(() => parseConfig({ SMTP_URL: "mail.example.com:25" }, CHANNEL_CONFIG)).toThrow(
      /^invalid configuration: SMTP_URL must be an smtp:\/\/ or smtps:\/\/ URL$/,
    );
    expect(() => parseConfig({ OAUTH_GITHUB_CLIENT_SECRET: "x".repeat(1025) }, CHANNEL_CONFIG)).toThrow(/^invalid configuration: OAUTH_GITHUB_CLIENT_SECRET /);
    for (const name of ["KRAKEN_API_URL", "OAUTH_GITHUB_TOKEN_URL", "OAUTH_GOOGLE_USERINFO_URL", "OAUTH_COINBASE_AUTHORIZATION_URL"]) {
      expect(() => parseConfig({ [name]: "http://127.0.0.1:9999/x" }, CHANNEL_CONFIG), name).toThrow(
        new RegExp(`^invalid configuration: ${name} must be an https:// URL \\(http:// only with ALLOW_PRIVATE_TARGETS=true`),
      );
      expect(parseConfig({ [name]: "http://127.0.0.1:9999/x", ALLOW_PRIVATE_TARGETS: "true" }, CHANNEL_CONFIG), name).toMatchObject({
        [name]: "http://127.0.0.1:9999/x",
      });
    }
  });
});

describe("the keys reach the channels", () => {
  it("Kraken's API URL: its default, and a stand-in's", async () => {
    const seen: string[] = [];
    const fetchBefore = globalThis.fetch;
    globalThis.fetch = (async (url: string | URL) => {
      seen.push(String(url));
      return new Response(JSON.stringify({ error: ["EAPI:Invalid key"] }), { headers: { "content-type": "application/json" } });
    }) as typeof fetch;
    try {
      const kraken = channelFor("account", "kraken");
      const v = pending({ type: "account", channel: "kraken", identifier: "AA88 N84G WOAK NMOI", canonical: "AA88N84GWOAKNMOI" });
      const body = { apiKey: "A".repeat(56), apiSecret: Buffer.alloc(64, 3).toString("base64") };
      await kraken.complete(v, body, CTX);
      const standIn = parseConfig({ KRAKEN_API_URL: "http://127.0.0.1:9/kraken", ALLOW_PRIVATE_TARGETS: "true" }, CHANNEL_CONFIG);
      expect(await kraken.complete(v, body, { ...CTX, config: standIn })).toEqual({
        ok: false,
        failure: ["invalid_code", "Kraken refused this API key and secret"],
      });
    } finally {
      globalThis.fetch = fetchBefore;
    }
    expect(seen.map((u) => new URL(u).origin + new URL(u).pathname.replace(/\/0\/private\/.*$/, ""))).toEqual([
      "https://api.kraken.com",
      "http://127.0.0.1:9/kraken",
    ]);
  });

  it("SMTP: the email channels are live with SMTP_URL, and the mailer is made from it", () => {
    const config = parseConfig({ PUBLIC_BASE_URL: "https://verify.example.com", SMTP_URL: "smtp://127.0.0.1:2525" }, CHANNEL_CONFIG);
    expect(channelFor("email", "email").missingProvider(config)).toEqual([]);
    expect(channelFor("domain", "email").missingProvider(config)).toEqual([]);
    expect(smtpMailer(config)).toBeDefined();
    expect(smtpMailer(parseConfig({}, CHANNEL_CONFIG))).toBeUndefined();
    expect(challenge("email", "email", "a@example.com", { env: "live", config }).sendTo).toBe("a@example.com");
  });

  it("an OAuth channel: its app and its stand-in endpoints", () => {
    const config = parseConfig(
      {
        OAUTH_GITHUB_CLIENT_ID: "gh-client",
        OAUTH_GITHUB_CLIENT_SECRET: "gh-secret",
        OAUTH_GITHUB_TOKEN_URL: "http://127.0.0.1:9/token",
        ALLOW_PRIVATE_TARGETS: "true",
      },
      CHANNEL_CONFIG,
    );
    expect(channelFor("social", "github").missingProvider(config)).toEqual([]);
    expect(providerSettings(config, "github")).toMatchObject({
      clientId: "gh-client",
      tokenUrl: "http://127.0.0.1:9/token",
      authorizationUrl: "https://github.com/login/oauth/authorize",
    });
  });
});

describe("a process that runs the verification service", () => {
  it.each([
    ["services/verification/src/main.ts", "KRAKEN_API_URL", "http://127.0.0.1:9/kraken"],
    ["services/verification/src/main.ts", "OAUTH_GITHUB_TOKEN_URL", "http://127.0.0.1:9/token"],
    ["services/verification/src/main.ts", "SMTP_URL", "mail.example.com:25"],
    ["scripts/start-all.ts", "KRAKEN_API_URL", "http://127.0.0.1:9/kraken"],
    ["scripts/start-all.ts", "SMTP_URL", "mail.example.com:25"],
  ])("%s refuses to start on a bad %s, with one line naming it", async (entry, name, value) => {
    const r = await start(entry, { [name]: value });
    expect(r.code).toBe(1);
    const lines = r.stderr.split("\n").filter(Boolean);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^invalid configuration: ${name} must be an`));
  });
});
