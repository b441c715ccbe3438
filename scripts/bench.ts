// `npm run bench`: throughput and latency of the hot REST paths against the stack as `npm start`
// runs it, next to a bare node:http hello-world and the raw RS256 signing rate measured in the
// same run, printed as one table of ratios against the targets in ARCHITECTURE.md.
// With DATABASE_URL / REDIS_URL set, the stack runs on them (a fresh database, dropped after).
// A measurement, not a test: it exits 0 whether or not the targets are met.
//
// env: BENCH_DURATION (s per case, default 10), BENCH_WARMUP (s, default 2), BENCH_CONNECTIONS
// (default 50), BENCH_CPU_PROF (a directory: run the stack with --cpu-prof and leave one
// .cpuprofile per start there; summarize with scripts/bench/profile-summary.ts).
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { load, loadCreateAndVerify, type LoadResult } from "./bench/load.ts";
import { paced } from "./bench/paced.ts";
import { mb, pct, perSec, table, type Row } from "./bench/report.ts";
import { measureSignRate } from "./bench/sign-rate.ts";
import { benchSse } from "./bench/sse.ts";
import { BENCH_WHATSAPP, benchHooks, startGraphStandIn } from "./bench/hooks.ts";
import { benchWebhooks } from "./bench/webhooks.ts";
import { createTenant, freshPostgres, startHelloWorld, startStack, stackEnv, type RunningStack } from "./bench/stack.ts";

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
const SSE_STREAMS = num("BENCH_SSE_STREAMS", 10_000);
const WEBHOOKS = num("BENCH_WEBHOOKS", 10_000);
const HOOKS = num("BENCH_HOOKS", 2_000);
const KEY_BITS = Number(process.env.PROOF_KEY_BITS ?? 2048);
const MB = 1024 * 1024;

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

async function json(url: string, init: RequestInit = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(url, init);
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const bad = (r: LoadResult) => r.non2xx + r.errors + r.mismatches;

async function main(): Promise<void> {
  const pgUrl = process.env.DATABASE_URL;
  const redisUrl = process.env.REDIS_URL;
  const mode = `${pgUrl ? "Postgres" : "PGlite (embedded)"} + ${redisUrl ? "Redis" : "in-process limits"}`;
  process.stderr.write(`bench: ${mode}; ${DURATION} s per case after ${WARMUP} s warm-up, ${CONNECTIONS} connections\n`);

  // 1. the raw signing rate, first, while nothing else runs on the machine
  process.stderr.write(`  raw RS256 signing (${KEY_BITS}-bit) …\n`);
  const load0 = loadavg()[0];
  const sign = measureSignRate(KEY_BITS, Math.min(DURATION, 3));

  // 2. the stack as `npm start` runs it, and the baseline server
  const db = pgUrl ? await freshPostgres(pgUrl) : undefined;
  if (db) cleanups.push(() => db.drop());
  const dataDir = mkdtempSync(path.join(tmpdir(), "icv-bench-"));
  cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }));
  // WhatsApp configured (live phone verifications and the signed hook), its replies to a local stand-in
  const graph = await startGraphStandIn();
  cleanups.push(() => graph.close());
  const env = await stackEnv(dataDir, {
    DATABASE_URL: db?.url,
    REDIS_URL: redisUrl,
    WHATSAPP_API_URL: graph.url,
    WHATSAPP_PHONE_NUMBER: BENCH_WHATSAPP.number,
    WHATSAPP_PHONE_NUMBER_ID: BENCH_WHATSAPP.phoneNumberId,
    WHATSAPP_ACCESS_TOKEN: BENCH_WHATSAPP.accessToken,
    WHATSAPP_APP_SECRET: BENCH_WHATSAPP.appSecret,
  });
  process.stderr.write("  starting the stack (cold) …\n");
  let stack: RunningStack = await startStack(env);
  let stopStack = () => stack.stop();
  cleanups.push(() => stopStack());
  const cold = stack.startMs;
  const hello = await startHelloWorld();
  cleanups.push(() => hello.stop());

  // 3. a tenant, one verified verification and its proof
  const t = await createTenant(stack.adminUrl, dataDir, "bench");
  const auth = { authorization: `Bearer ${t.testKey}` };
  const created = await json(`${stack.url}/api/v1/verifications`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify({ type: "phone", channel: "telegram", identifier: "+37069199199", external_user_id: "bench-user" }),
  });
  if (created.status !== 201) throw new Error(`create failed: ${created.status} ${JSON.stringify(created.body)}`);
  const id = created.body.id as string;
  const verified = await json(`${stack.url}/api/v1/verifications/${id}/test-verify`, { method: "POST", headers: auth });
  if (verified.status !== 200 || !verified.body.proof_token) throw new Error(`test-verify failed: ${verified.status} ${JSON.stringify(verified.body)}`);
  const validateBody = JSON.stringify({ proof_token: verified.body.proof_token, identifier: "+37069199199" });
  const check = await json(`${stack.url}/api/v1/proofs/validate`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: validateBody });
  if (check.body?.valid !== true) throw new Error(`validate did not say valid: ${JSON.stringify(check.body)}`);

  await sleep(2000);
  const idleRss = stack.rss();

  // 4. the load
  const common = { connections: CONNECTIONS, duration: DURATION, pipelining: 1, timeout: 10 };
  const hw = await load({ label: "hello-world", url: hello.url, target: () => hello.pid, ...common }, WARMUP);
  const tested = () => stack.mainPid();
  const getUrl = `${stack.url}/api/v1/verifications/${id}`;
  const get = await load({ label: "GET /api/v1/verifications/:id", url: getUrl, headers: auth, target: tested, ...common }, WARMUP);
  const half = Math.max(1, Math.round(get.rate / 2));
  const getHalfAc = await load({ label: `GET at ${half} req/s (autocannon overallRate)`, url: getUrl, headers: auth, target: tested, ...common, overallRate: half }, 0);
  process.stderr.write(`  GET at ${half} req/s (paced, open loop) …\n`);
  const getHalf = await paced({ url: getUrl, headers: auth, rate: half, seconds: DURATION, maxInFlight: CONNECTIONS, target: tested });
  const validate = await load(
    {
      label: "POST /api/v1/proofs/validate",
      url: `${stack.url}/api/v1/proofs/validate`,
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: validateBody,
      verifyBody: (b) => String(b).includes('"valid":true'),
      target: tested,
      ...common,
    },
    WARMUP,
  );
  const cv = await loadCreateAndVerify({ url: stack.url, ...common }, t.testKey, WARMUP, "create + test-verify", tested);
  await sleep(1000);
  const busyRss = stack.rss();

  process.stderr.write(`  ${SSE_STREAMS} SSE streams …\n`);
  const rssBeforeStreams = stack.rss() ?? 0;
  let rssWithStreams = 0;
  const sse = await benchSse(stack.url, t.testKey, SSE_STREAMS, () => (rssWithStreams = stack.rss() ?? 0));
  const perStream = (rssWithStreams - rssBeforeStreams) / sse.opened;

  process.stderr.write(`  ${HOOKS} WhatsApp hooks → verified …\n`);
  const hooks = await benchHooks(stack.url, t.liveKey, HOOKS, CONNECTIONS, graph.replies, 0);
  const hooksOne = await benchHooks(stack.url, t.liveKey, Math.min(HOOKS, 200), 1, graph.replies, HOOKS);

  // 5. warm start: stop, start again on the same DATA_DIR (and database)
  process.stderr.write("  stopping; warm start …\n");
  await stack.stop();
  stack = await startStack(env);
  stopStack = () => stack.stop();
  const warm = stack.startMs;
  await sleep(1000);
  const warmIdleRss = stack.rss();
  await stack.stop();

  // 6. webhook deliveries: the webhook pipeline in this process, the receiver on a thread
  process.stderr.write(`  ${WEBHOOKS} webhook deliveries, receiver always 200 …\n`);
  const wh = await benchWebhooks(WEBHOOKS, false, pgUrl);
  process.stderr.write(`  ${WEBHOOKS} webhook deliveries, receiver fails each first attempt …\n`);
  const whFail = await benchWebhooks(WEBHOOKS, true, pgUrl);

  // 7. the table
  const rows: Row[] = [
    { name: "hello-world (node:http, own process)", rate: perSec(hw.rate), p50: hw.p50, p99: hw.p99, ratio: "baseline", target: "", errors: bad(hw), cpu: hw.cpu, cpuMsPerOp: hw.cpuMsPerOp },
    { name: `raw RS256 sign (node:crypto, 1 thread, ${KEY_BITS}-bit, ${sign.inputBytes} B input)`, rate: perSec(sign.perSecond, "sig/s"), ratio: "baseline", target: "", cpu: sign.cpu, cpuMsPerOp: (sign.cpu.targetSeconds * 1000) / sign.count },
    { name: "GET /api/v1/verifications/:id", rate: perSec(get.rate), p50: get.p50, p99: get.p99, ratio: `${pct(get.rate / hw.rate)} of hello`, target: "≥ 30 % of hello", pass: get.rate >= 0.3 * hw.rate, errors: bad(get), cpu: get.cpu, cpuMsPerOp: get.cpuMsPerOp },
    { name: `GET …/:id at ${half} req/s, paced evenly (open loop)`, rate: perSec(getHalf.rate), p50: getHalf.p50, p99: getHalf.p99, ratio: `p99 ${getHalf.p99.toFixed(1)} ms`, target: "p99 ≤ 10 ms", pass: getHalf.p99 <= 10, errors: bad(getHalf), cpu: getHalf.cpu, cpuMsPerOp: getHalf.cpuMsPerOp },
    { name: `GET …/:id at ${half} req/s, autocannon overallRate (bursts)`, rate: perSec(getHalfAc.rate), p50: getHalfAc.p50, p99: getHalfAc.p99, ratio: `p99 ${getHalfAc.p99} ms`, target: "(info)", errors: bad(getHalfAc), cpu: getHalfAc.cpu, cpuMsPerOp: getHalfAc.cpuMsPerOp },
    { name: "create + test-verify (2 requests/proof)", rate: perSec(cv.rate, "proofs/s"), p50: cv.p50, p99: cv.p99, ratio: `${pct(cv.rate / sign.perSecond)} of raw sign`, target: "≥ 50 % of raw sign", pass: cv.rate >= 0.5 * sign.perSecond, errors: bad(cv), cpu: cv.cpu, cpuMsPerOp: cv.cpuMsPerOp },
    { name: "create + test-verify, absolute", rate: perSec(cv.rate, "proofs/s"), ratio: perSec(cv.rate, "proofs/s"), target: `≥ 1,000 proofs/s${pgUrl ? "" : " (Postgres)"}`, pass: cv.rate >= 1000, errors: bad(cv) },
    { name: "POST /api/v1/proofs/validate", rate: perSec(validate.rate), p50: validate.p50, p99: validate.p99, ratio: `${pct(validate.rate / hw.rate)} of hello`, target: "≥ 50 % of hello", pass: validate.rate >= 0.5 * hw.rate, errors: bad(validate), cpu: validate.cpu, cpuMsPerOp: validate.cpuMsPerOp },
    { name: `SSE: ${sse.opened} streams on one verification, test-verify → status_changed`, rate: `${sse.received} got it`, p50: sse.p50, p99: sse.p99, ratio: `p99 ${sse.p99.toFixed(1)} ms`, target: "p99 ≤ 100 ms, 10,000 streams", pass: sse.opened >= 10_000 && sse.received === sse.opened && sse.p99 <= 100, errors: sse.opened - sse.received },
    { name: "SSE: memory per open stream (gateway RSS growth / streams)", ratio: `${(perStream / 1024).toFixed(1)} KB`, target: `(info; opened in ${(sse.openMs / 1000).toFixed(1)} s, test-verify took ${sse.verifyMs.toFixed(1)} ms)` },
    { name: `inbound WhatsApp hook → verified (proof + events), ${CONNECTIONS} at once`, rate: perSec(hooks.rate, "hooks/s"), p50: hooks.p50, p99: hooks.p99, ratio: `${hooks.verified}/${hooks.count} verified, ${hooks.replies} replies`, target: "(info)", errors: hooks.count - hooks.ok },
    { name: "inbound WhatsApp hook → verified, one at a time", rate: perSec(hooksOne.rate, "hooks/s"), p50: hooksOne.p50, p99: hooksOne.p99, ratio: `${hooksOne.verified}/${hooksOne.count} verified, ${hooksOne.replies} replies`, target: "(info)", errors: hooksOne.count - hooksOne.ok },
    { name: "webhook deliveries to a local receiver (0 % failures)", rate: perSec(wh.rate, "deliveries/s"), ratio: `${wh.delivered}/${wh.count} delivered in ${wh.seconds.toFixed(1)} s`, target: "≥ 1,000/s, none lost", pass: wh.rate >= 1000 && wh.delivered === wh.count, errors: wh.count - wh.delivered },
    { name: "webhook deliveries, receiver fails half the requests", rate: perSec(whFail.rate, "deliveries/s"), ratio: `${whFail.delivered}/${whFail.count} delivered, ${whFail.refused} of ${whFail.requests} requests got 500`, target: "none lost", pass: whFail.delivered === whFail.count, errors: whFail.count - whFail.delivered },
    { name: "all-in-one RSS, idle after start", ratio: mb(idleRss), target: "≤ 400 MB", pass: idleRss !== undefined && idleRss <= 400 * MB },
    { name: "all-in-one RSS, after the load", ratio: mb(busyRss), target: "" },
    { name: "all-in-one RSS, idle after warm start", ratio: mb(warmIdleRss), target: "≤ 400 MB", pass: warmIdleRss !== undefined && warmIdleRss <= 400 * MB },
    { name: "start (cold: fresh data dir, migrations, keys)", ratio: `${(cold / 1000).toFixed(2)} s`, target: "" },
    { name: "start (warm: same data dir) until /health 200", ratio: `${(warm / 1000).toFixed(2)} s`, target: "≤ 5 s", pass: warm <= 5000 },
  ];
  process.stdout.write(`\nICV bench — ${mode}; ${DURATION} s per case, ${CONNECTIONS} connections, node ${process.version}\n`);
  process.stdout.write(`${table(rows)}\n`);
  process.stdout.write(
    `machine: ${availableParallelism()} cores, shared with anything else running; load average (1 min) ${load0.toFixed(2)} before, ${loadavg()[0].toFixed(2)} after. ` +
      `"CPU ms/op" = CPU time of the process under test per request (per proof; per signature), which holds up under contention; ` +
      `"cores" = mean cores used by the process under test / autocannon / Postgres+Redis servers / everything else.\n`,
  );
  const notes = [
    ["GET", get],
    ["GET half (paced)", getHalf],
    ["GET half (autocannon)", getHalfAc],
    ["validate", validate],
    ["create+test-verify", cv],
  ] as const;
  for (const [name, r] of notes) {
    if (bad(r) > 0) process.stdout.write(`note: ${name} had ${r.non2xx} non-2xx, ${r.errors} errors, ${r.mismatches} mismatches; status codes ${JSON.stringify(r.statusCodes)}\n`);
  }
  process.stdout.write(
    `create + test-verify: ${cv.proofs} proofs in ${DURATION} s; p50/p99 are per request (create and test-verify mixed). ` +
      `autocannon latencies have 1 ms resolution. autocannon's overallRate sends each connection's per-second quota back to back at the top of ` +
      `every second (a burst at full load), so the p99-at-half-load target is judged on the evenly paced open-loop run.\n`,
  );
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
