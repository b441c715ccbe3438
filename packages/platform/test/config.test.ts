import { execFile } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "../src/config.ts";

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, "../../..");

/** The ConfigError parseConfig throws for env (fails the test when it does not throw). */
function configError(env: Record<string, string>): ConfigError {
  try {
    parseConfig(env);
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

describe("OAuth provider and Kraken endpoints (configuration only, never from callers)", () => {
  it("default to the providers' real https endpoints and refuse plain http unless ALLOW_PRIVATE_TARGETS is on (a stand-in)", () => {
    expect(parseConfig({}).KRAKEN_API_URL).toBe("https://api.kraken.com");
    for (const name of ["OAUTH_GITHUB_TOKEN_URL", "OAUTH_GOOGLE_USERINFO_URL", "OAUTH_COINBASE_AUTHORIZATION_URL", "KRAKEN_API_URL"]) {
      expect(() => parseConfig({ [name]: "http://127.0.0.1:9999/x" }), name).toThrow(new RegExp(`${name} must be an https:// URL`));
      expect((parseConfig({ [name]: "http://127.0.0.1:9999/x", ALLOW_PRIVATE_TARGETS: "true" }) as unknown as Record<string, string>)[name]).toBe(
        "http://127.0.0.1:9999/x",
      );
      expect((parseConfig({ [name]: "https://stand-in.example/x" }) as unknown as Record<string, string>)[name]).toBe("https://stand-in.example/x");
    }
  });
});
