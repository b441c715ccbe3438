// One column of the bench: the stack as `npm start` runs it in one database mode (embedded PGlite
// with in-process limits, or Postgres + Redis), every case against it, as table rows and figures.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { BenchMode } from "./case.ts";
import { extraCases } from "./cases.ts";
import { BENCH_WHATSAPP, benchHooks, startGraphStandIn } from "./hooks.ts";
import { load, loadCreateAndVerify, type LoadResult } from "./load.ts";
import { analyze, databasesLike, untilQuiet } from "./pg-stats.ts";
import { paced } from "./paced.ts";
import { measurePkSelects } from "./pk-select.ts";
import { mb, pct, perSec, type Row } from "./report.ts";
import { idleSqlRate, measureSqlPerProof } from "./sql-count.ts";
import { benchSse, benchSseFloor } from "./sse.ts";
import { createTenant, freshPostgres, startStack, stackEnv, type RunningStack } from "./stack.ts";
import { benchWebhooks } from "./webhooks.ts";

export interface ModeOptions {
  mode: BenchMode;
  pgUrl?: string;
  redisUrl?: string;
  duration: number;
  warmup: number;
  connections: number;
  sseStreams: number;
  webhooks: number;
  hooks: number;
  sqlProofs: number;
  /** same-run baselines: req/s of the bare servers, RS256 signatures/s */
  baselines: { node: number; express: number; sign: number };
  /** BENCH_CASES: run only these extra cases (by name), none of the built-in ones */
  only?: string[];
  /** registers cleanups that must run even when the bench is interrupted */
  cleanups: Array<() => Promise<unknown>>;
}

export interface ModeResult {
  label: string;
  rows: Row[];
  /** the figures of the summary table and --json */
  figures: Record<string, number>;
  notes: string[];
}

const MB = 1024 * 1024;
const bad = (r: LoadResult) => r.non2xx + r.errors + r.mismatches;

async function json(url: string, init: RequestInit = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(url, init);
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

export async function runMode(o: ModeOptions): Promise<ModeResult> {
  const notes: string[] = [];
  // a case that fails (a shared database out of connections, say) costs its own rows, not the run's
  const attempt = async <T>(name: string, run: () => Promise<T>, failed: T): Promise<T> => {
    try {
      return await run();
    } catch (e) {
      notes.push(`${name} failed: ${(e as Error).message.slice(0, 300)}`);
      return failed;
    }
  };
  const label = o.mode === "postgres" ? `Postgres${o.redisUrl ? " + Redis" : ""}` : "embedded (PGlite, in-process limits)";
  const db = o.pgUrl ? await freshPostgres(o.pgUrl) : undefined;
  if (db) o.cleanups.push(() => db.drop());
  const dataDir = mkdtempSync(path.join(tmpdir(), "icv-bench-"));
  o.cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }));
  process.stderr.write(`\n[${label}]\n  one primary-key SELECT/s (baseline) …\n`);
  const pk = await measurePkSelects(Math.min(o.duration, 3), db?.url);
  // WhatsApp configured (live phone verifications and the signed hook), its replies to a local stand-in
  const graph = await startGraphStandIn();
  o.cleanups.push(() => graph.close());
  const env = await stackEnv(dataDir, {
    DATABASE_URL: db?.url,
    REDIS_URL: o.redisUrl,
    ALLOW_PRIVATE_TARGETS: "true", // the stand-in is plain http on loopback
    WHATSAPP_API_URL: graph.url,
    WHATSAPP_PHONE_NUMBER: BENCH_WHATSAPP.number,
    WHATSAPP_PHONE_NUMBER_ID: BENCH_WHATSAPP.phoneNumberId,
    WHATSAPP_ACCESS_TOKEN: BENCH_WHATSAPP.accessToken,
    WHATSAPP_APP_SECRET: BENCH_WHATSAPP.appSecret,
  });
  process.stderr.write("  starting the stack (cold) …\n");
  let stack: RunningStack = await startStack(env);
  const stopStack = () => stack.stop();
  o.cleanups.push(() => stopStack());
  const cold = stack.startMs;
  // as `npm start` runs it: WORKERS processes under a primary (the default on Postgres + Redis: one per CPU, less one beside a local database)
  const workers = stack.workers();
  const processes = workers ? `primary + ${workers} workers` : "one process";

  // a tenant, one verified verification and its proof
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
  const check = await json(`${stack.url}/api/v1/proofs/validate`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: validateBody,
  });
  if (check.body?.valid !== true) throw new Error(`validate did not say valid: ${JSON.stringify(check.body)}`);

  // the extra cases (scripts/bench/cases.ts), or only those BENCH_CASES names
  const extras = async (only?: string[]) => {
    const extraRows: Row[] = [];
    const figures: Record<string, number> = {};
    for (const c of extraCases.filter((x) => !only || only.includes(x.name))) {
      process.stderr.write(`  ${c.name} …\n`);
      const r = await attempt(
        c.name,
        () =>
          c.run({
            mode: o.mode,
            stack,
            databaseUrl: db?.url,
            testKey: t.testKey,
            liveKey: t.liveKey,
            duration: o.duration,
            warmup: o.warmup,
            connections: o.connections,
          }),
        { rows: [], figures: {} },
      );
      extraRows.push(...r.rows);
      notes.push(...(r.notes ?? []));
      for (const [k, v] of Object.entries(r.figures)) figures[`${c.name}: ${k}`] = v;
    }
    return { extraRows, figures };
  };
  if (o.only) {
    const { extraRows, figures } = await extras(o.only);
    await stack.stop();
    return { label, rows: extraRows, figures, notes };
  }

  await sleep(2000);
  const idleRss = stack.rss();
  const idleSql = await idleSqlRate(stack.adminUrl);

  // the load
  const common = { connections: o.connections, duration: o.duration, pipelining: 1, timeout: 10 };
  const tested = () => stack.mainPid();
  const getUrl = `${stack.url}/api/v1/verifications/${id}`;
  const get = await load({ label: "GET /api/v1/verifications/:id", url: getUrl, headers: auth, target: tested, ...common }, o.warmup);
  const half = Math.max(1, Math.round(get.rate / 2));
  process.stderr.write(`  GET at ${half} req/s (paced, open loop) …\n`);
  const getHalf = await paced({ url: getUrl, headers: auth, rate: half, seconds: o.duration, maxInFlight: o.connections, target: tested });
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
    o.warmup,
  );
  if (db) {
    // the tables as a running system has them (see the minimal issuer case): some proofs, then ANALYZE
    await loadCreateAndVerify({ url: stack.url, ...common, duration: Math.max(2, o.warmup) }, t.testKey, 0, "settling: create + test-verify");
    await analyze(o.pgUrl!, await databasesLike(o.pgUrl!, db.name));
  }
  // (the settling load is the warm-up on Postgres)
  const cv = await loadCreateAndVerify({ url: stack.url, ...common }, t.testKey, db ? 0 : o.warmup, "create + test-verify", tested);
  process.stderr.write(`  SQL statements per proof (${o.sqlProofs} proofs, ${o.connections} at once, until the event pipeline is quiet) …\n`);
  await sleep(2000); // the last case's events through the pipeline first
  const sql = await measureSqlPerProof(stack.url, stack.adminUrl, t.testKey, idleSql, o.sqlProofs, o.connections);
  await sleep(1000);
  const busyRss = stack.rss();

  process.stderr.write(`  ${o.sseStreams} SSE streams …\n`);
  const rssBeforeStreams = stack.rss() ?? 0;
  let rssWithStreams = 0;
  const noSse = { opened: 0, openMs: NaN, received: 0, p50: NaN, p99: NaN, max: NaN, verifyMs: NaN };
  const sse = await attempt("SSE", () => benchSse(stack.url, t.testKey, o.sseStreams, () => (rssWithStreams = stack.rss() ?? 0)), noSse);
  process.stderr.write(`  ${o.sseStreams} SSE streams on a bare node:http fan-out (the floor) …\n`);
  const sseFloor = await attempt("SSE floor", () => benchSseFloor(o.sseStreams), noSse);
  const perStream = (rssWithStreams - rssBeforeStreams) / sse.opened;

  process.stderr.write(`  ${o.hooks} WhatsApp hooks → verified …\n`);
  const noHooks = {
    count: 0,
    rate: NaN,
    p50: NaN,
    p99: NaN,
    ok: 0,
    verified: 0,
    replies: 0,
    cpu: { target: NaN, loadgen: NaN, db: NaN, others: NaN, targetSeconds: NaN },
    cpuMsPerHook: NaN,
  };
  const hooks = await attempt(
    "WhatsApp hooks",
    () => benchHooks(stack.url, t.liveKey, o.hooks, o.connections, graph.replies, 0, () => stack.mainPid()),
    noHooks,
  );
  // one at a time: the latency of a single hook, without queueing behind the others
  const hooksOne = await attempt(
    "WhatsApp hooks one at a time",
    () => benchHooks(stack.url, t.liveKey, Math.ceil(o.hooks / 10), 1, graph.replies, o.hooks, () => stack.mainPid()),
    noHooks,
  );

  const { extraRows, figures } = await extras();

  // warm start: stop, start again on the same DATA_DIR (and database)
  process.stderr.write("  stopping; warm start …\n");
  await stack.stop();
  if (db) {
    const waited = await untilQuiet(o.pgUrl!, db.name, 120_000);
    if (waited > 1_000) notes.push(`warm start: began after the stopped stack's last statements finished in Postgres (${(waited / 1000).toFixed(1)} s)`);
  }
  const restarted = await attempt("warm start", () => startStack(env), undefined);
  if (restarted) stack = restarted;
  const warm = restarted?.startMs ?? NaN;
  await sleep(1000);
  const warmIdleRss = restarted?.rss();
  await restarted?.stop();

  // webhook deliveries: the webhook pipeline in this process, the receiver on a thread
  process.stderr.write(`  ${o.webhooks} webhook deliveries, receiver always 200 …\n`);
  const noWebhooks = { count: o.webhooks, rate: NaN, seconds: NaN, delivered: 0, failed: 0, pending: 0, requests: 0, refused: 0 };
  const wh = await attempt("webhooks", () => benchWebhooks(o.webhooks, false, o.pgUrl), noWebhooks);
  process.stderr.write(`  ${o.webhooks} webhook deliveries, receiver fails each first attempt …\n`);
  const whFail = await attempt("webhooks with failures", () => benchWebhooks(o.webhooks, true, o.pgUrl), noWebhooks);

  const proofTarget = o.mode === "postgres" ? 1000 : 300;
  const byDb = Object.entries(sql.byDb)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${v.toFixed(1)}`)
    .join(", ");
  const { node, express, sign } = o.baselines;
  const rows: Row[] = [
    { name: "npm start's processes (WORKERS; CPU and RSS below are their sum)", ratio: processes, target: "(info)" },
    {
      name: "one primary-key SELECT (10 at once, this database)",
      rate: perSec(pk.perSecond, "SELECT/s"),
      ratio: "baseline",
      target: "",
      cpuMsPerOp: pk.cpuMsPerOp,
    },
    {
      name: "GET /api/v1/verifications/:id",
      rate: perSec(get.rate),
      p50: get.p50,
      p99: get.p99,
      ratio: `${pct(get.rate / express)} of Express, ${pct(get.rate / node)} of node:http`,
      target: "≥ 50 % of Express hello",
      pass: get.rate >= 0.5 * express,
      errors: bad(get),
      cpu: get.cpu,
      cpuMsPerOp: get.cpuMsPerOp,
    },
    {
      name: `GET …/:id at ${half} req/s, paced evenly (open loop)`,
      rate: perSec(getHalf.rate),
      p50: getHalf.p50,
      p99: getHalf.p99,
      ratio: `p99 ${getHalf.p99.toFixed(1)} ms`,
      target: "p99 ≤ 10 ms",
      pass: getHalf.p99 <= 10,
      errors: bad(getHalf),
      cpu: getHalf.cpu,
      cpuMsPerOp: getHalf.cpuMsPerOp,
    },
    {
      name: "POST /api/v1/proofs/validate",
      rate: perSec(validate.rate),
      p50: validate.p50,
      p99: validate.p99,
      ratio: `${pct(validate.rate / express)} of Express hello`,
      target: "≥ 50 % of Express hello",
      pass: validate.rate >= 0.5 * express,
      errors: bad(validate),
      cpu: validate.cpu,
      cpuMsPerOp: validate.cpuMsPerOp,
    },
    {
      name: "create + test-verify (2 requests/proof)",
      rate: perSec(cv.rate, "proofs/s"),
      p50: cv.p50,
      p99: cv.p99,
      ratio: `${pct(cv.rate / sign)} of raw sign; ${(1000 / cv.cpuMsPerOp).toFixed(0)} proofs per CPU-second`,
      target: `≥ ${proofTarget.toLocaleString("en-US")} proofs/s`,
      pass: cv.rate >= proofTarget,
      errors: bad(cv),
      cpu: cv.cpu,
      cpuMsPerOp: cv.cpuMsPerOp,
    },
    {
      name: "SQL statements per proof (request + background)",
      ratio: `${sql.perProof.toFixed(1)} (${sql.duringRequests.toFixed(1)} while the requests ran)`,
      target: "≤ 12",
      pass: sql.perProof <= 12,
    },
    { name: "  … by database user, per proof", ratio: byDb, target: `(info; idle polling ${sql.idlePerSec.toFixed(0)}/s subtracted)` },
    {
      name: `SSE: ${sse.opened} streams on one verification, test-verify → status_changed`,
      rate: `${sse.received} got it`,
      p50: sse.p50,
      p99: sse.p99,
      ratio: `p99 ${sse.p99.toFixed(1)} ms, ${(sse.p99 / sseFloor.p99).toFixed(2)}× the floor's`,
      target: "p99 ≤ 100 ms, 10,000 streams",
      pass: sse.opened >= 10_000 && sse.received === sse.opened && sse.p99 <= 100,
      errors: sse.opened - sse.received,
    },
    {
      name: `SSE floor: ${sseFloor.opened} streams on a bare node:http fan-out, same client`,
      rate: `${sseFloor.received} got it`,
      p50: sseFloor.p50,
      p99: sseFloor.p99,
      ratio: `p99 ${sseFloor.p99.toFixed(1)} ms`,
      target: "(baseline)",
      errors: sseFloor.opened - sseFloor.received,
    },
    {
      name: "SSE: memory per open stream (gateway RSS growth / streams)",
      ratio: `${(perStream / 1024).toFixed(1)} KB`,
      target: `(info; opened in ${(sse.openMs / 1000).toFixed(1)} s, test-verify took ${sse.verifyMs.toFixed(1)} ms)`,
    },
    {
      name: `inbound WhatsApp hook → verified (proof + events), ${o.connections} at once`,
      rate: perSec(hooks.rate, "hooks/s"),
      p50: hooks.p50,
      p99: hooks.p99,
      ratio: `${hooks.verified}/${hooks.count} verified, ${hooks.replies} replies`,
      target: "(info)",
      errors: hooks.count - hooks.ok,
      cpu: hooks.cpu,
      cpuMsPerOp: hooks.cpuMsPerHook,
    },
    {
      name: "inbound WhatsApp hook → verified, one at a time",
      rate: perSec(hooksOne.rate, "hooks/s"),
      p50: hooksOne.p50,
      p99: hooksOne.p99,
      ratio: `${hooksOne.verified}/${hooksOne.count} verified, ${hooksOne.replies} replies`,
      target: "(info)",
      errors: hooksOne.count - hooksOne.ok,
      cpu: hooksOne.cpu,
      cpuMsPerOp: hooksOne.cpuMsPerHook,
    },
    ...extraRows,
    {
      name: "webhook deliveries to a local receiver (0 % failures)",
      rate: perSec(wh.rate, "deliveries/s"),
      ratio: `${wh.delivered}/${wh.count} delivered in ${wh.seconds.toFixed(1)} s`,
      target: "≥ 1,000/s, none lost",
      pass: wh.rate >= 1000 && wh.delivered === wh.count,
      errors: wh.count - wh.delivered,
    },
    {
      name: "webhook deliveries, receiver fails half the requests",
      rate: perSec(whFail.rate, "deliveries/s"),
      ratio: `${whFail.delivered}/${whFail.count} delivered, ${whFail.refused} of ${whFail.requests} requests got 500`,
      target: "none lost",
      pass: whFail.delivered === whFail.count,
      errors: whFail.count - whFail.delivered,
    },
    {
      name: `all-in-one RSS, idle after start (${processes})`,
      ratio: mb(idleRss),
      target: workers ? `≤ 400 MB (one process; ${mb((idleRss ?? 0) / (workers + 1))} each here)` : "≤ 400 MB",
      pass: idleRss !== undefined && idleRss <= 400 * MB * Math.max(1, workers),
    },
    { name: "all-in-one RSS, after the load", ratio: mb(busyRss), target: "" },
    {
      name: "all-in-one RSS, idle after warm start",
      ratio: mb(warmIdleRss),
      target: workers ? "≤ 400 MB per process" : "≤ 400 MB",
      pass: warmIdleRss !== undefined && warmIdleRss <= 400 * MB * Math.max(1, workers),
    },
    { name: "start (cold: fresh data dir, migrations, keys)", ratio: `${(cold / 1000).toFixed(2)} s`, target: "" },
    { name: "start (warm: same data dir) until /health 200", ratio: `${(warm / 1000).toFixed(2)} s`, target: "≤ 5 s", pass: warm <= 5000 },
  ];
  Object.assign(figures, {
    pk_selects_per_s: pk.perSecond,
    get_per_s: get.rate,
    get_vs_express: get.rate / express,
    get_p99_ms: get.p99,
    get_half_load_p99_ms: getHalf.p99,
    get_cpu_ms: get.cpuMsPerOp,
    validate_per_s: validate.rate,
    validate_vs_express: validate.rate / express,
    validate_cpu_ms: validate.cpuMsPerOp,
    proofs_per_s: cv.rate,
    proof_cpu_ms: cv.cpuMsPerOp,
    proofs_per_cpu_s: 1000 / cv.cpuMsPerOp,
    proof_vs_sign: cv.rate / sign,
    sql_per_proof: sql.perProof,
    sql_per_proof_during_requests: sql.duringRequests,
    sse_streams: sse.opened,
    sse_received: sse.received,
    sse_p99_ms: sse.p99,
    sse_floor_p99_ms: sseFloor.p99,
    hooks_per_s: hooks.rate,
    hook_cpu_ms: hooks.cpuMsPerHook,
    hook_one_at_a_time_p50_ms: hooksOne.p50,
    webhooks_per_s: wh.rate,
    webhooks_lost_with_failures: whFail.count - whFail.delivered,
    rss_idle_mb: (idleRss ?? 0) / MB,
    start_warm_s: warm / 1000,
    workers,
  });
  for (const [k, v] of Object.entries(sql.byDb)) figures[`sql_per_proof_${k}`] = v;
  for (const [name, r] of [
    ["GET", get],
    ["GET half (paced)", getHalf],
    ["validate", validate],
    ["create+test-verify", cv],
  ] as const) {
    if (bad(r) > 0)
      notes.push(`${name} had ${r.non2xx} non-2xx, ${r.errors} errors, ${r.mismatches} mismatches; status codes ${JSON.stringify(r.statusCodes)}`);
  }
  notes.push(`create + test-verify: ${cv.proofs} proofs in ${o.duration} s; p50/p99 are per request (create and test-verify mixed).`);
  return { label: workers ? `${label}, ${workers} workers` : label, rows, figures, notes };
}
