import { execFile } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ConfigError, type ConfigShape, parseConfig, providerUrl, settingsOf } from "../src/config.ts";

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, "../../..");

/** The ConfigError parseConfig throws for env (fails the test when it does not throw). */
function configError(env: Record<string, string>, ...sections: ConfigShape[]): ConfigError {
  try {
    parseConfig(env, ...sections);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return e as ConfigError;
  }
  throw new Error(`parseConfig accepted ${JSON.stringify(env)}`);
}

const KEY_16 = Buffer.alloc(16, 7).toString("base64");
const KEY_32 = Buffer.alloc(32, 7).toString("base64");

describe("parseConfig", () => {
  it("TRUST_PROXY: unset trusts no forwarded header; a hop count, or a list of IPs, CIDRs and names", () => {
    expect(parseConfig({}).TRUST_PROXY).toBe(false);
    expect(parseConfig({ TRUST_PROXY: "1" }).TRUST_PROXY).toBe(1);
    expect(parseConfig({ TRUST_PROXY: "10.0.0.0/8, loopback,fd00::/8,192.0.2.7" }).TRUST_PROXY).toEqual(["10.0.0.0/8", "loopback", "fd00::/8", "192.0.2.7"]);
    for (const bad of ["true", "everyone", "10.0.0.0/99", "1,loopback", "300.1.1.1"]) {
      expect(configError({ TRUST_PROXY: bad }).message, bad).toMatch(/^invalid configuration: TRUST_PROXY must be a hop count/);
    }
  });

  it("fills the documented defaults from an empty environment", () => {
    const c = parseConfig({});
    expect(c).toMatchObject({
      PORT: 3000,
      HOST: "0.0.0.0",
      DATA_DIR: "./data",
      LOG_LEVEL: "info",
      DB_POOL_MAX: 10,
      GRPC_HOST: "127.0.0.1",
      ADMIN_PORT: 3001,
      PROOF_KEY_BITS: 2048,
      RATE_LIMIT_PER_MINUTE: 100,
      BOOTSTRAP_DEV_TENANT: true,
      publicBaseUrl: "http://localhost:3000",
      issuer: "http://localhost:3000",
    });
    expect(c.DATABASE_URL).toBeUndefined();
    expect(c.REDIS_URL).toBeUndefined();
    expect(c.databaseUrl("proof")).toBeUndefined();
    expect(c.servicePort("verification")).toBe(50051);
    expect(c.servicePort("proof")).toBe(50052);
    expect(c.serviceUrl("proof")).toBe("https://127.0.0.1:50052");
  });

  it("treats empty strings as unset", () => {
    const c = parseConfig({ PORT: "", DATABASE_URL: "", LOG_LEVEL: "" });
    expect(c.PORT).toBe(3000);
    expect(c.DATABASE_URL).toBeUndefined();
    expect(c.LOG_LEVEL).toBe("info");
  });

  it("coerces numbers and booleans and derives the per-service values", () => {
    const c = parseConfig({
      PORT: "8080",
      PUBLIC_BASE_URL: "https://icv.example.com/",
      BOOTSTRAP_DEV_TENANT: "0",
      GATEWAY_DATABASE_URL: "postgres://db/gateway",
      DATABASE_URL: "postgres://db/main",
      PROOF_DATABASE_URL: "postgresql://db/proof",
      PROOF_GRPC_PORT: "0",
      VERIFICATION_URL: "https://verification.internal:9000",
      PROOF_KEY_ENCRYPTION_KEY: KEY_32,
    });
    expect(c.PORT).toBe(8080);
    expect(c.BOOTSTRAP_DEV_TENANT).toBe(false);
    expect(c.publicBaseUrl).toBe("https://icv.example.com");
    expect(c.issuer).toBe("https://icv.example.com");
    expect(c.servicePort("proof")).toBe(0);
    expect(c.serviceUrl("verification")).toBe("https://verification.internal:9000");
    expect(c.databaseUrl("proof")).toBe("postgresql://db/proof");
    expect(c.databaseUrl("verification")).toBe("postgres://db/main");
    expect(c.databaseUrl("gateway")).toBe("postgres://db/gateway");
  });

  it("makes a development tenant on a first start by default only on the embedded database, or when asked", () => {
    expect(parseConfig({}).BOOTSTRAP_DEV_TENANT).toBe(true);
    expect(parseConfig({ DATABASE_URL: "postgres://db/main" }).BOOTSTRAP_DEV_TENANT).toBe(false);
    expect(parseConfig({ GATEWAY_DATABASE_URL: "postgres://db/gateway" }).BOOTSTRAP_DEV_TENANT).toBe(false);
    expect(parseConfig({ DATABASE_URL: "postgres://db/main", BOOTSTRAP_DEV_TENANT: "true" }).BOOTSTRAP_DEV_TENANT).toBe(true);
    expect(parseConfig({ BOOTSTRAP_DEV_TENANT: "false" }).BOOTSTRAP_DEV_TENANT).toBe(false);
  });

  it.each([
    ["PORT", { PORT: "abc" }],
    ["PORT", { PORT: "70000" }],
    ["PORT", { PORT: "1.5" }],
    ["DATABASE_URL", { DATABASE_URL: "mysql://x" }],
    ["REDIS_URL", { REDIS_URL: "http://127.0.0.1:6379" }],
    ["PROOF_KEY_ENCRYPTION_KEY", { PROOF_KEY_ENCRYPTION_KEY: KEY_16 }],
    ["PROOF_KEY_BITS", { PROOF_KEY_BITS: "1024" }],
    ["LOG_LEVEL", { LOG_LEVEL: "verbose" }],
    ["BOOTSTRAP_DEV_TENANT", { BOOTSTRAP_DEV_TENANT: "yes" }],
    ["ADMIN_TOKEN", { ADMIN_TOKEN: "short" }],
    ["PROOF_GRPC_PORT", { PROOF_GRPC_PORT: "abc" }],
    ["VERIFICATION_DATABASE_URL", { VERIFICATION_DATABASE_URL: "mysql://x" }],
    ["WHATSAPP_PHONE_NUMBER", { WHATSAPP_PHONE_NUMBER: "call me" }],
    ["PROOF_URL", { PROOF_URL: "http://proof.internal:50052" }],
    ["ADMIN_TOKEN", { ADMIN_HOST: "0.0.0.0" }],
    ["TLS_CA_FILE", { TLS_CERT_FILE: "/etc/icv/tls/tls.crt" }],
  ])("a bad %s throws a ConfigError with one line naming it", (name, env) => {
    const e = configError(env);
    expect(e.message).not.toContain("\n");
    expect(e.message).toMatch(new RegExp(`\\b${name}\\b`));
    // the message names the variable, it does not echo another one
    expect(e.message.startsWith(`invalid configuration: ${name} `)).toBe(true);
  });

  it("binds the admin listener to loopback unless told otherwise, and elsewhere only with an ADMIN_TOKEN", () => {
    expect(parseConfig({}).ADMIN_HOST).toBe("127.0.0.1");
    expect(configError({ ADMIN_HOST: "0.0.0.0" }).message).toContain("ADMIN_TOKEN is required");
    expect(parseConfig({ ADMIN_HOST: "0.0.0.0", ADMIN_TOKEN: "x".repeat(24) }).ADMIN_HOST).toBe("0.0.0.0");
    expect(parseConfig({ ADMIN_HOST: "::1" }).ADMIN_HOST).toBe("::1");
  });

  it("names what a postgres URL and a key-encryption key must be", () => {
    expect(configError({ DATABASE_URL: "mysql://x" }).message).toContain("postgres://");
    expect(configError({ PROOF_KEY_ENCRYPTION_KEY: KEY_16 }).message).toContain("32 bytes");
  });

  it("ETHEREUM_RPC_URL: an http(s) JSON-RPC URL, unset by default; its timeout 5 s, from 100 ms to 60 s", () => {
    expect(parseConfig({}).ETHEREUM_RPC_URL).toBeUndefined();
    expect(parseConfig({}).ETHEREUM_RPC_TIMEOUT_MS).toBe(5_000);
    expect(parseConfig({ ETHEREUM_RPC_URL: "https://node.example/v3/k", ETHEREUM_RPC_TIMEOUT_MS: "800" })).toMatchObject({
      ETHEREUM_RPC_URL: "https://node.example/v3/k",
      ETHEREUM_RPC_TIMEOUT_MS: 800,
    });
    for (const bad of ["ws://node.example", "node.example", "file:///etc/passwd"])
      expect(configError({ ETHEREUM_RPC_URL: bad }).message).toContain("ETHEREUM_RPC_URL");
    for (const bad of ["50", "60001", "soon"]) expect(configError({ ETHEREUM_RPC_TIMEOUT_MS: bad }).message).toContain("ETHEREUM_RPC_TIMEOUT_MS");
  });
});

describe("loadConfig in an entry point", () => {
  const run = (env: Record<string, string>) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        ["--import", "tsx", path.join(here, "fixtures", "load-config.ts")],
        { cwd: repoRoot, env: { PATH: process.env.PATH ?? "", ...env }, timeout: 20_000 },
        (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr }),
      );
    });

  it("prints exactly one line naming the bad variable and exits with code 1", async () => {
    const r = await run({ PORT: "abc" });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    const lines = r.stderr.split("\n").filter(Boolean);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^invalid configuration: PORT /);
  });

  it("names a key-encryption key of the wrong length and never prints its value", async () => {
    const r = await run({ PROOF_KEY_ENCRYPTION_KEY: KEY_16 });
    expect(r.code).toBe(1);
    const lines = r.stderr.split("\n").filter(Boolean);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("PROOF_KEY_ENCRYPTION_KEY");
    expect(r.stderr).not.toContain(KEY_16);
  });

  it("starts normally on a good environment", async () => {
    const r = await run({ PORT: "4321" });
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe("loaded port=4321\n");
    expect(r.code).toBe(0);
  });
});

describe("sections: keys declared beside the code that reads them (the verification channels')", () => {
  const section = {
    ACME_API_URL: providerUrl("https://api.acme.example"),
    ACME_HOOK_URL: providerUrl(),
    ACME_TOKEN: z.string().min(8, "must be at least 8 characters").optional(),
  };

  it("are validated and kept with the config's own keys, and only where they are given", () => {
    const c = parseConfig({ ACME_TOKEN: "12345678", PORT: "4000" }, section);
    expect(settingsOf(c, section)).toMatchObject({ ACME_API_URL: "https://api.acme.example", ACME_TOKEN: "12345678" });
    expect(c.PORT).toBe(4000);
    expect(configError({ ACME_TOKEN: "short" }, section).message).toBe("invalid configuration: ACME_TOKEN must be at least 8 characters");
    expect(Object.keys(parseConfig({ ACME_TOKEN: "12345678" }))).not.toContain("ACME_TOKEN");
  });

  it("refuse a provider endpoint that is not https unless ALLOW_PRIVATE_TARGETS is on (a stand-in)", () => {
    for (const name of ["ACME_API_URL", "ACME_HOOK_URL"]) {
      expect(configError({ [name]: "http://127.0.0.1:9999/x" }, section).message).toBe(
        `invalid configuration: ${name} must be an https:// URL (http:// only with ALLOW_PRIVATE_TARGETS=true, for a local stand-in)`,
      );
      expect(settingsOf(parseConfig({ [name]: "http://127.0.0.1:9999/x", ALLOW_PRIVATE_TARGETS: "true" }, section), section)[name as "ACME_API_URL"]).toBe(
        "http://127.0.0.1:9999/x",
      );
      expect(settingsOf(parseConfig({ [name]: "https://stand-in.example/x" }, section), section)[name as "ACME_API_URL"]).toBe("https://stand-in.example/x");
    }
    // a plain URL key of the same section is not a provider endpoint
    expect(parseConfig({ ACME_TOKEN: "http://not-a-url-key" }, section)).toBeDefined();
  });

  it("hold the messaging APIs to https too (the bot token or account key goes with every call)", () => {
    for (const name of ["TELEGRAM_API_URL", "WHATSAPP_API_URL", "TWILIO_API_URL", "VIBER_API_URL"]) {
      expect(configError({ [name]: "http://api.example/x" }).message).toMatch(new RegExp(`^invalid configuration: ${name} must be an https:// URL`));
      expect((parseConfig({ [name]: "http://127.0.0.1:9/x", ALLOW_PRIVATE_TARGETS: "true" }) as Record<string, unknown>)[name]).toBe("http://127.0.0.1:9/x");
    }
  });
});
