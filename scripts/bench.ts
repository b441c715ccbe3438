// `npm run bench`: the hot paths against the stack as `npm start` runs it, in both database modes
// in one run (embedded PGlite, then Postgres + Redis when DATABASE_URL is set; REDIS_URL optional),
// next to baselines measured in the same run: a bare node:http and a bare Express hello-world, the
// raw RS256 signing rate and one primary-key SELECT/s. Prints one table per mode and a summary
// of the targets with both columns; `npm run bench -- --json` also writes the same figures as JSON
// to bench-results.json (`--json=PATH`: there).
// A measurement, not a test: it exits 0 whether or not the targets are met.
//
// env: BENCH_DURATION (s per case, default 10), BENCH_WARMUP (s, default 2), BENCH_CONNECTIONS
// (default 50), BENCH_MODES (default "embedded,postgres"), BENCH_SSE_STREAMS, BENCH_WEBHOOKS,
// BENCH_HOOKS, BENCH_SQL_PROOFS (proofs of the SQL count, default 1000), BENCH_CPU_PROF (a directory: run the stack with --cpu-prof and
// leave one .cpuprofile per start there; summarize with scripts/bench/profile-summary.ts).
// Extra cases: scripts/bench/cases.ts; BENCH_CASES="status list,SD-JWT VC issuing" runs only those
// (by name), none of the built-in ones.
import { writeFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { load } from "./bench/load.ts";
import { paced } from "./bench/paced.ts";
import { runMode, type ModeResult } from "./bench/mode.ts";
import { perSec, table, type Row } from "./bench/report.ts";
import { measureSignRate } from "./bench/sign-rate.ts";
import { startHelloWorld } from "./bench/stack.ts";
import type { BenchMode } from "./bench/case.ts";

const num = (name: string, dflt: number) => {
  const v = Number(process.env[name] ?? dflt);
  if (!Number.isFinite(v) || v <= 0) {
    process.stderr.write(`${name} must be a positive number\n`);
    process.exit(1);
  }
  return v;
};
const DURATION = num("BENCH_DURATION", 10);
const WARMUP = process.env.BENCH_WARMUP === "0" ? 0 : num("BENCH_WARMUP", 2);
const CONNECTIONS = num("BENCH_CONNECTIONS", 50);
const KEY_BITS = Number(process.env.PROOF_KEY_BITS ?? 2048);
const JSON_ARG = process.argv.find((a) => a === "--json" || a.startsWith("--json="));
const JSON_OUT = JSON_ARG && (JSON_ARG.includes("=") ? JSON_ARG.slice("--json=".length) : "bench-results.json");
const MODES = (process.env.BENCH_MODES ?? "embedded,postgres").split(",").map((m) => m.trim()) as BenchMode[];
const out = (s: string) => process.stdout.write(s);

const cleanups: Array<() => Promise<unknown>> = [];
async function cleanup(): Promise<void> {
  for (const c of cleanups.splice(0).reverse()) await c().catch((e: Error) => process.stderr.write(`cleanup: ${e.message}\n`));
}
for (const sig of ["SIGINT", "SIGTERM"] as const) {
  process.once(sig, () => {
    process.stderr.write(`\n${sig}: stopping children\n`);
    void cleanup().finally(() => process.exit(130));
  });
}

/** The summary: the targets of the issue, one column per mode (expressHalfP99: the GET p99 target's floor, one for both). */
function summary(results: Partial<Record<BenchMode, ModeResult>>, expressHalfP99: number): string {
  const f = (m: BenchMode, k: string, fmt: (v: number) => string) => {
    const v = results[m]?.figures[k];
    return v === undefined ? "not run" : fmt(v);
  };
  const both = (k: string, fmt: (v: number) => string) => [f("embedded", k, fmt), f("postgres", k, fmt)];
  const pctOf = (v: number) => `${(v * 100).toFixed(0)} %`;
  // the extra case's figures (scripts/bench/cases.ts), named `{case}: {figure}`
  const domainCheck = (m: BenchMode) => {
    const rate = results[m]?.figures["domain check: domain_checks_per_s"];
    const p99 = results[m]?.figures["domain check: domain_check_p99_ms"];
    return rate === undefined || p99 === undefined ? "not run" : `${Math.round(rate).toLocaleString("en-US")} checks/s, p99 ${p99.toFixed(1)} ms`;
  };
  const lines: Array<[string, string[], string]> = [
    ["create + test-verify, proofs/s", both("proofs_per_s", (v) => v.toFixed(0)), "≥ 1,000 Postgres, ≥ 300 embedded"],
    ["  ICV / minimal durable issuer, proofs/s (median of rounds)", both("minimal issuer: ratio_median", (v) => v.toFixed(2)), "≥ 0.6"],
    ["  CPU ms per proof (all-in-one process)", both("proof_cpu_ms", (v) => v.toFixed(2)), "≈ 2 ms all in"],
    ["SQL statements per proof (request + background)", both("sql_per_proof", (v) => v.toFixed(1)), "≤ 12"],
    ["GET /verifications/:id vs Express hello", both("get_vs_express", pctOf), "≥ 50 %"],
    ["GET /verifications/:id p99 at half load", both("get_half_load_p99_ms", (v) => `${v.toFixed(1)} ms`), "≤ 10 ms"],
    ["  the bare Express hello at half its rate (the floor)", (["embedded", "postgres"] as const).map(() => `${expressHalfP99.toFixed(1)} ms`), "(baseline)"],
    ["POST /proofs/validate vs Express hello", both("validate_vs_express", pctOf), "≥ 50 %"],
    ["SSE, 10,000 streams, change → event p99", both("sse_p99_ms", (v) => `${v.toFixed(0)} ms`), "≤ 100 ms"],
    ["  the same on a bare node:http fan-out (the floor)", both("sse_floor_p99_ms", (v) => `${v.toFixed(0)} ms`), "(baseline)"],
    ["webhook deliveries/s", both("webhooks_per_s", (v) => v.toFixed(0)), "≥ 1,000"],
    ["domain check against a local authoritative server", (["embedded", "postgres"] as const).map(domainCheck), "(info)"],
    ["scheduled re-checks, 10,000 due proofs, re-checks/s", both("rechecks: rechecks_per_s", (v) => v.toFixed(0)), "(info)"],
  ];
  const head = ["path", "embedded (PGlite)", "Postgres + Redis", "target"];
  const cells = lines.map(([name, vals, target]) => [name, ...vals, target]);
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c: string[]) => `| ${c.map((v, i) => (i === 0 ? v.padEnd(widths[i]) : v.padStart(widths[i]))).join(" | ")} |`;
  return [line(head), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...cells.map(line)].join("\n");
}

async function main(): Promise<void> {
  const pgUrl = process.env.DATABASE_URL;
  const redisUrl = process.env.REDIS_URL;
  process.stderr.write(`bench: modes ${MODES.join(", ")}; ${DURATION} s per case after ${WARMUP} s warm-up, ${CONNECTIONS} connections\n`);
  const load0 = loadavg()[0];

  // 1. same-run baselines: raw signing first, while nothing else of ours runs, then the bare servers
  process.stderr.write(`  raw RS256 signing (${KEY_BITS}-bit) …\n`);
  const sign = measureSignRate(KEY_BITS, Math.min(DURATION, 3));
  const hello = await startHelloWorld("node");
  cleanups.push(() => hello.stop());
  const helloExpress = await startHelloWorld("express");
  cleanups.push(() => helloExpress.stop());
  const common = { connections: CONNECTIONS, duration: DURATION, pipelining: 1, timeout: 10 };
  const hw = await load({ label: "hello-world (node:http)", url: hello.url, target: () => hello.pid, ...common }, WARMUP);
  const hwx = await load({ label: "hello-world (Express)", url: helloExpress.url, target: () => helloExpress.pid, ...common }, WARMUP);
  // the floor of the GET p99 target: the same paced load at half the rate, on the bare Express
  process.stderr.write(`  hello-world (Express) at ${Math.round(hwx.rate / 2)} req/s (paced, open loop) …\n`);
  const hwxHalf = await paced({
    url: helloExpress.url,
    rate: Math.max(1, Math.round(hwx.rate / 2)),
    seconds: DURATION,
    maxInFlight: CONNECTIONS,
    target: () => helloExpress.pid,
  });
  await hello.stop();
  await helloExpress.stop();
  const baselineRows: Row[] = [
    {
      name: "hello-world (node:http, own process)",
      rate: perSec(hw.rate),
      p50: hw.p50,
      p99: hw.p99,
      ratio: "baseline",
      target: "",
      cpu: hw.cpu,
      cpuMsPerOp: hw.cpuMsPerOp,
    },
    {
      name: "hello-world (Express, own process)",
      rate: perSec(hwx.rate),
      p50: hwx.p50,
      p99: hwx.p99,
      ratio: "baseline",
      target: "",
      cpu: hwx.cpu,
      cpuMsPerOp: hwx.cpuMsPerOp,
    },
    {
      name: "hello-world (Express) at half its rate, paced evenly (open loop)",
      rate: perSec(hwxHalf.rate),
      p50: hwxHalf.p50,
      p99: hwxHalf.p99,
      ratio: `p99 ${hwxHalf.p99.toFixed(1)} ms`,
      target: "(baseline)",
      cpu: hwxHalf.cpu,
      cpuMsPerOp: hwxHalf.cpuMsPerOp,
    },
    {
      name: `raw RS256 sign (node:crypto, 1 thread, ${KEY_BITS}-bit, ${sign.inputBytes} B input)`,
      rate: perSec(sign.perSecond, "sig/s"),
      ratio: "baseline",
      target: "",
      cpu: sign.cpu,
      cpuMsPerOp: (sign.cpu.targetSeconds * 1000) / sign.count,
    },
  ];

  // 2. each mode in turn
  const results: Partial<Record<BenchMode, ModeResult>> = {};
  for (const mode of MODES) {
    if (mode === "postgres" && !pgUrl) {
      process.stderr.write("\n[Postgres + Redis] not run: set DATABASE_URL (and REDIS_URL) to a server this bench may create a database on\n");
      continue;
    }
    let r: ModeResult;
    try {
      r = await runMode({
        mode,
        pgUrl: mode === "postgres" ? pgUrl : undefined,
        redisUrl: mode === "postgres" ? redisUrl : undefined,
        duration: DURATION,
        warmup: WARMUP,
        connections: CONNECTIONS,
        sseStreams: num("BENCH_SSE_STREAMS", 10_000),
        webhooks: num("BENCH_WEBHOOKS", 10_000),
        hooks: num("BENCH_HOOKS", 2_000),
        sqlProofs: num("BENCH_SQL_PROOFS", 1_000),
        only: process.env.BENCH_CASES?.split(",").map((c) => c.trim()),
        baselines: { node: hw.rate, express: hwx.rate, sign: sign.perSecond },
        cleanups,
      });
    } catch (e) {
      // one mode that cannot be measured (its stack did not start, …) leaves the other's figures
      process.stderr.write(`[${mode}] failed: ${(e as Error).stack ?? e}\n`);
      await cleanup();
      continue;
    }
    results[mode] = r;
    await cleanup();
  }

  // 3. the tables
  const machine =
    `machine: ${availableParallelism()} cores, shared with anything else running; load average (1 min) ${load0.toFixed(2)} before, ${loadavg()[0].toFixed(2)} after. ` +
    `"CPU ms/op" = CPU time of the process under test per request (per proof; per signature), which holds up under contention; ` +
    `"cores" = mean cores used by the process under test / autocannon / Postgres+Redis servers / everything else.`;
  out(`\nICV bench — ${DURATION} s per case, ${CONNECTIONS} connections, node ${process.version}\n\nBaselines (same run)\n${table(baselineRows)}\n`);
  for (const r of Object.values(results)) {
    out(`\n${r!.label}\n${table(r!.rows)}\n`);
    for (const n of r!.notes) out(`note: ${n}\n`);
  }
  out(`\nSummary\n${summary(results, hwxHalf.p99)}\n${machine}\n`);
  if (JSON_OUT) {
    const doc = {
      node: process.version,
      cores: availableParallelism(),
      load_average_before: load0,
      load_average_after: loadavg()[0],
      duration_s: DURATION,
      connections: CONNECTIONS,
      baselines: {
        node_http_hello_per_s: hw.rate,
        express_hello_per_s: hwx.rate,
        express_hello_half_load_p99_ms: hwxHalf.p99,
        rs256_signs_per_s: sign.perSecond,
        rs256_sign_cpu_ms: (sign.cpu.targetSeconds * 1000) / sign.count,
      },
      modes: Object.fromEntries(Object.entries(results).map(([m, r]) => [m, r!.figures])),
    };
    writeFileSync(JSON_OUT, `${JSON.stringify(doc, null, 2)}\n`);
    out(`figures written to ${JSON_OUT}\n`);
  }
}

// missed targets still exit 0; a bench that could not measure (the stack did not start, …) exits 1
let code = 0;
try {
  await main();
} catch (e) {
  process.stderr.write(`bench failed: ${(e as Error).stack ?? e}\n`);
  code = 1;
} finally {
  await cleanup();
}
process.exit(code);
