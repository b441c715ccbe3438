// .env.example is the list of record of the configuration: every variable the config reads is
// in it (as `NAME=` or `# NAME=`), and every variable in it is read, by the config or by one of
// the tools named below. The config's variables are the platform's and the sections'
// (the verification channels' CHANNEL_CONFIG: SMTP, the OAuth apps, Kraken).
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { CHANNEL_CONFIG } from "../../../services/verification/src/channels/registry.ts";
import { CONFIG_VARIABLES as PLATFORM_VARIABLES } from "../src/config.ts";

const CONFIG_VARIABLES = [...PLATFORM_VARIABLES, ...Object.keys(CHANNEL_CONFIG)];

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");

/** Variables in .env.example that the services' config does not read: who reads them, and why. */
const READ_ELSEWHERE: Record<string, { file: string; why: string }> = {
  ADMIN_URL: { file: "scripts/admin.ts", why: "the admin CLI's address of the admin API" },
  BENCH_DURATION: { file: "scripts/bench.ts", why: "npm run bench: seconds per case" },
  BENCH_WARMUP: { file: "scripts/bench.ts", why: "npm run bench: warm-up seconds" },
  BENCH_CONNECTIONS: { file: "scripts/bench.ts", why: "npm run bench: connections" },
  BENCH_SSE_STREAMS: { file: "scripts/bench.ts", why: "npm run bench: event streams opened" },
  BENCH_WEBHOOKS: { file: "scripts/bench.ts", why: "npm run bench: webhook deliveries sent" },
  BENCH_HOOKS: { file: "scripts/bench.ts", why: "npm run bench: inbound WhatsApp hooks sent" },
  BENCH_SQL_PROOFS: { file: "scripts/bench.ts", why: "npm run bench: proofs whose SQL statements are counted" },
  BENCH_MODES: { file: "scripts/bench.ts", why: "npm run bench: the database modes run" },
  BENCH_CASES: { file: "scripts/bench.ts", why: "npm run bench: only these extra cases" },
  BENCH_LOG_SECONDS: { file: "scripts/bench/log.ts", why: "the transparency log's bench: seconds per proofs/s run" },
  BENCH_LOG_PRELOAD: { file: "scripts/bench/log.ts", why: "the transparency log's bench: entries in the tree before appends are timed" },
  BENCH_NODE_FLAGS: { file: "scripts/bench/stack.ts", why: "npm run bench: the stack's runtime flags" },
  BENCH_CPU_PROF: { file: "scripts/bench/stack.ts", why: "npm run bench: profile the benchmarked stack" },
  BENCH_NO_PROFILER: { file: "scripts/bench/profile-case.ts", why: "one bench case alone: measured without the profiler" },
  BENCH_BASELINE_ROUNDS: { file: "scripts/bench/minimal-baseline.ts", why: "npm run bench: rounds of ICV against the minimal durable issuer" },
  ISSUER_KEY: { file: "scripts/bench/minimal-issuer.ts", why: "the bench's minimal durable issuer: the API key it accepts" },
  ISSUER_POOL: { file: "scripts/bench/minimal-issuer.ts", why: "the bench's minimal durable issuer: its pg pool size" },
  ISSUER_PGLITE_DIR: { file: "scripts/bench/minimal-issuer.ts", why: "the bench's minimal durable issuer: the PGlite it runs on (embedded column)" },
  BENCH_RECHECKS: { file: "scripts/bench/rechecks.ts", why: "the re-check bench run alone: due proofs swept" },
};

/** Names assigned in .env.example, commented out or not. */
function exampleVariables(): Set<string> {
  const text = readFileSync(path.join(ROOT, ".env.example"), "utf8");
  return new Set([...text.matchAll(/^#?[ \t]*([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]));
}

/** A read of `name` in the source: process.env.NAME, process.env["NAME"], or the name as a string literal. */
function reads(source: string, name: string): boolean {
  return new RegExp(`process\\.env\\.${name}\\b|process\\.env\\[["'\`]${name}["'\`]\\]|["'\`]${name}["'\`]`).test(source);
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = path.join(dir, f);
    if (statSync(p).isDirectory()) return f === "node_modules" || f === "test" || f === "gen" ? [] : tsFiles(p);
    return p.endsWith(".ts") ? [p] : [];
  });
}

describe(".env.example", () => {
  it("is parsed", () => {
    expect(exampleVariables().has("PORT")).toBe(true);
    expect(exampleVariables().has("e")).toBe(false);
    expect(CONFIG_VARIABLES).toContain("PORT");
    expect(CONFIG_VARIABLES).toContain("VERIFICATION_GRPC_PORT");
    for (const name of ["SMTP_URL", "KRAKEN_API_URL", "OAUTH_TIKTOK_USERINFO_URL"]) expect(CONFIG_VARIABLES).toContain(name);
  });

  it("lists every variable the config reads", () => {
    const listed = exampleVariables();
    expect(CONFIG_VARIABLES.filter((v) => !listed.has(v))).toEqual([]);
  });

  it("lists only variables the config or a named tool reads", () => {
    const config = new Set(CONFIG_VARIABLES);
    expect([...exampleVariables()].filter((v) => !config.has(v) && !READ_ELSEWHERE[v])).toEqual([]);
  });

  it("names tools that do read their variables", () => {
    const unread = Object.entries(READ_ELSEWHERE).filter(([name, { file }]) => !reads(readFileSync(path.join(ROOT, file), "utf8"), name));
    expect(unread.map(([name, { file }]) => `${name} in ${file}`)).toEqual([]);
    expect(Object.keys(READ_ELSEWHERE).filter((v) => !exampleVariables().has(v))).toEqual([]);
  });

  it("covers the variables read directly from process.env outside the config", () => {
    const known = new Set([...CONFIG_VARIABLES, ...Object.keys(READ_ELSEWHERE)]);
    const dirs = ["packages", "services", "scripts"].map((d) => path.join(ROOT, d));
    const unknown = new Set<string>();
    for (const file of dirs.flatMap(tsFiles)) {
      const text = readFileSync(file, "utf8");
      for (const m of text.matchAll(/process\.env\.([A-Z][A-Z0-9_]*)|process\.env\[["'`]([A-Z][A-Z0-9_]*)["'`]\]/g)) {
        const name = m[1] ?? m[2];
        if (!known.has(name)) unknown.add(`${name} (${path.relative(ROOT, file)})`);
      }
    }
    expect([...unknown]).toEqual([]);
  });

  it("holds every variable docs/configuration.md names", () => {
    const doc = readFileSync(path.join(ROOT, "docs/configuration.md"), "utf8");
    const named = new Set([...doc.matchAll(/`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?:=[^`]*)?`/g)].map((m) => m[1]));
    expect(named.size).toBeGreaterThan(10);
    expect([...named].filter((v) => !exampleVariables().has(v))).toEqual([]);
  });
});
