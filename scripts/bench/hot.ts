// The hot read paths only (GET /verifications/:id, POST /proofs/validate, SSE fan-out), against
// one stack as `npm start` runs it, with the CPU of the stack process per request: a quick loop
// for work on these paths (the full bench takes minutes).
//   node --import tsx scripts/bench/hot.ts [cases=get,validate,sse] [seconds=5] [connections=50] [reps=1]
// cases: hello (a bare Express hello-world, the baseline), get (then paced at half its rate),
// get-only, validate, create (create + test-verify, what the bench runs before its SSE case), sse.
// reps: each load case that many times in a row, then the lowest and the median CPU per request
// (the lowest is the run least disturbed by other work on a shared machine); sse: that many runs.
// DATABASE_URL / REDIS_URL as in the bench; BENCH_CPU_PROF=dir profiles the stack (the printed
// windows select each case's samples for profile-summary.ts); BENCH_SSE_STREAMS (default 10000).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { load, loadCreateAndVerify } from "./load.ts";
import { paced } from "./paced.ts";
import { benchSse } from "./sse.ts";
import { createTenant, freshPostgres, startHelloWorld, startStack, stackEnv, verifiedPhone } from "./stack.ts";

const [casesArg = "get,validate,sse", secondsArg = "5", connArg = "50", repsArg = "1"] = process.argv.slice(2);
const cases = new Set(casesArg.split(","));
const seconds = Number(secondsArg);
const connections = Number(connArg);
const streams = Number(process.env.BENCH_SSE_STREAMS ?? 10_000);
const reps = Number(repsArg);
const out = (s: string) => process.stdout.write(`${s}\n`);
const cpuSummary = (name: string, runs: number[]) => {
  if (runs.length < 2) return;
  const s = [...runs].sort((a, b) => a - b);
  out(
    `${name}: CPU µs/op over ${runs.length} runs: min ${s[0].toFixed(0)}, median ${s[Math.floor(s.length / 2)].toFixed(0)}  (${runs.map((r) => r.toFixed(0)).join(" ")})`,
  );
};
const db = process.env.DATABASE_URL ? await freshPostgres(process.env.DATABASE_URL) : undefined;
const dataDir = mkdtempSync(path.join(tmpdir(), "icv-hot-"));
const env = await stackEnv(dataDir, { DATABASE_URL: db?.url, REDIS_URL: process.env.REDIS_URL });
const stack = await startStack(env);
const now = () => process.hrtime.bigint() / 1000n;
try {
  const t = await createTenant(stack.adminUrl, dataDir, "hot");
  const auth = { authorization: `Bearer ${t.testKey}` };
  const v = await verifiedPhone(stack.url, t.testKey, "+37069199199");
  const target = () => stack.mainPid();
  const report = (name: string, r: Awaited<ReturnType<typeof load>>, from: bigint) =>
    out(
      `${name}: ${Math.round(r.rate)}/s p50 ${r.p50.toFixed(1)} ms p99 ${r.p99.toFixed(1)} ms, bad ${r.non2xx + r.errors + r.mismatches}, stack ${(r.cpuMsPerOp * 1000).toFixed(0)} µs CPU/op, ` +
        `cores stack/loadgen/db/other ${[r.cpu.target, r.cpu.loadgen, r.cpu.db, r.cpu.others].map((v) => v.toFixed(2)).join("/")}  window ${from},${now()}`,
    );
  if (cases.has("hello")) {
    const hello = await startHelloWorld("express");
    try {
      await load({ label: "hello warm-up", url: hello.url, connections, duration: 2 }, 0);
      const runs: number[] = [];
      for (let i = 0; i < reps; i++) {
        const from = now();
        const r = await load({ label: "Express hello", url: hello.url, connections, duration: seconds, target: () => hello.pid }, 0);
        report("Express hello", r, from);
        runs.push(r.cpuMsPerOp * 1000);
      }
      cpuSummary("Express hello", runs);
    } finally {
      await hello.stop();
    }
  }
  if (cases.has("get") || cases.has("get-only")) {
    const url = `${stack.url}/api/v1/verifications/${v.id}`;
    await load({ label: "GET warm-up", url, headers: auth, connections, duration: 2 }, 0);
    const runs: number[] = [];
    let r!: Awaited<ReturnType<typeof load>>;
    for (let i = 0; i < reps; i++) {
      const from = now();
      r = await load({ label: "GET", url, headers: auth, connections, duration: seconds, target }, 0);
      report("GET", r, from);
      runs.push(r.cpuMsPerOp * 1000);
    }
    cpuSummary("GET", runs);
    if (!cases.has("get-only")) {
      const from2 = now();
      const half = await paced({ url, headers: auth, rate: Math.round(r.rate / 2), seconds, maxInFlight: connections, target });
      report(`GET paced at ${Math.round(r.rate / 2)}/s`, half, from2);
    }
  }
  if (cases.has("validate")) {
    const opts = {
      label: "validate",
      url: `${stack.url}/api/v1/proofs/validate`,
      method: "POST" as const,
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ proof_token: v.proofToken, identifier: "+37069199199" }),
      verifyBody: (b: unknown) => String(b).includes('"valid":true'),
      connections,
    };
    await load({ ...opts, duration: 2 }, 0);
    const runs: number[] = [];
    for (let i = 0; i < reps; i++) {
      const from = now();
      const r = await load({ ...opts, duration: seconds, target }, 0);
      report("validate", r, from);
      runs.push(r.cpuMsPerOp * 1000);
    }
    cpuSummary("validate", runs);
  }
  if (cases.has("create")) {
    // what the full bench runs before its SSE case: proofs signed back to back (the heap and the caches grow)
    const from = now();
    const r = await loadCreateAndVerify({ url: stack.url, connections, duration: seconds }, t.testKey, 0, "create + test-verify", target);
    out(`create + test-verify: ${r.rate.toFixed(0)} proofs/s, stack ${r.cpuMsPerOp.toFixed(2)} ms CPU/proof  window ${from},${now()}`);
  }
  if (cases.has("sse")) {
    await sleep(500);
    for (let i = 0; i < reps; i++) {
      const from = now();
      const s = await benchSse(stack.url, t.testKey, streams);
      out(
        `SSE ${s.opened} streams: ${s.received} got it, p50 ${s.p50.toFixed(0)} ms p99 ${s.p99.toFixed(0)} ms max ${s.max.toFixed(0)} ms, test-verify ${s.verifyMs.toFixed(0)} ms, opened in ${(s.openMs / 1000).toFixed(1)} s  window ${from},${now()}`,
      );
      await sleep(1000);
    }
  }
} finally {
  await stack.stop();
  await db?.drop();
  rmSync(dataDir, { recursive: true, force: true });
}
