// Profiles the stack under one bench case only, so a profile shows one path's costs:
//   node --import tsx scripts/bench/profile-case.ts get|validate|create|create-sd|hooks [seconds=10] [profile-dir=/tmp/icv-prof] [connections=50]
// (create-sd: create + test-verify with proof_format sd-jwt-vc, to set beside create's profile)
// (hooks: signed WhatsApp hooks carrying live codes, `seconds` × 200 of them, as the bench sends them)
// Starts the stack as `npm start` does, with --cpu-prof (DATABASE_URL / REDIS_URL
// are honoured as in the bench; BENCH_NO_PROFILER=1 runs it without the profiler, to compare two versions of
// the code by the printed rate and CPU per operation), warms up 2 s, loads for `seconds`, stops it and prints the
// command that summarizes the main-thread .cpuprofile over the measured window only.
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { BENCH_WHATSAPP, benchHooks, startGraphStandIn } from "./hooks.ts";
import { load, loadCreateAndVerify } from "./load.ts";
import { analyze } from "./pg-stats.ts";
import { createTenant, freshPostgres, startStack, stackEnv, verifiedPhone } from "./stack.ts";

const [which = "get", secondsArg = "10", dirArg = "/tmp/icv-prof", connArg = "50"] = process.argv.slice(2);
const connections = Number(connArg);
if (!["get", "validate", "create", "create-sd", "hooks"].includes(which)) {
  process.stderr.write("usage: profile-case get|validate|create|create-sd|hooks [seconds] [profile-dir]\n");
  process.exit(1);
}
const seconds = Number(secondsArg);
const profileDir = path.resolve(dirArg, `${which}-${Date.now()}`);
const profiling = !process.env.BENCH_NO_PROFILER;
if (profiling) {
  mkdirSync(profileDir, { recursive: true });
  process.env.BENCH_CPU_PROF = profileDir;
}

const db = process.env.DATABASE_URL ? await freshPostgres(process.env.DATABASE_URL) : undefined;
const dataDir = mkdtempSync(path.join(tmpdir(), "icv-prof-"));
const graph = await startGraphStandIn();
const env = await stackEnv(dataDir, {
  DATABASE_URL: db?.url,
  REDIS_URL: process.env.REDIS_URL,
  ALLOW_PRIVATE_TARGETS: "true",
  WHATSAPP_API_URL: graph.url,
  WHATSAPP_PHONE_NUMBER: BENCH_WHATSAPP.number,
  WHATSAPP_PHONE_NUMBER_ID: BENCH_WHATSAPP.phoneNumberId,
  WHATSAPP_ACCESS_TOKEN: BENCH_WHATSAPP.accessToken,
  WHATSAPP_APP_SECRET: BENCH_WHATSAPP.appSecret,
});
const stack = await startStack(env);
let window = "";
try {
  const t = await createTenant(stack.adminUrl, dataDir, "profile");
  const auth = { authorization: `Bearer ${t.testKey}` };
  const v = await verifiedPhone(stack.url, t.testKey, "+37069199199");
  const target = () => stack.mainPid();
  let hooksSent = 0;
  const run = async (duration: number) => {
    if (which === "hooks") {
      const count = duration * 200;
      const h = await benchHooks(stack.url, t.liveKey, count, connections, graph.replies, 1_000_000 + hooksSent, target);
      hooksSent += count;
      return { rate: h.rate, p50: Math.round(h.p50), p99: Math.round(h.p99), non2xx: count - h.ok, cpuMsPerOp: h.cpuMsPerHook, cpu: h.cpu };
    }
    const common = { connections, duration, target };
    return which === "get"
      ? load({ label: "GET", url: `${stack.url}/api/v1/verifications/${v.id}`, headers: auth, ...common }, 0)
      : which === "validate"
        ? load(
            {
              label: "validate",
              url: `${stack.url}/api/v1/proofs/validate`,
              method: "POST",
              headers: { ...auth, "content-type": "application/json" },
              body: JSON.stringify({ proof_token: v.proofToken, identifier: "+37069199199" }),
              ...common,
            },
            0,
          )
        : loadCreateAndVerify({ url: stack.url, connections, duration }, t.testKey, 0, "create + test-verify", target, {
            proof_format: which === "create-sd" ? "sd-jwt-vc" : "jwt",
          });
  };
  await run(2); // warm-up
  if (db) await analyze(process.env.DATABASE_URL!, [db.name]); // as autovacuum would have (see minimal-baseline.ts)
  // V8 profile timestamps and process.hrtime are both CLOCK_MONOTONIC microseconds on Linux
  const from = process.hrtime.bigint() / 1000n;
  const r = await run(seconds);
  window = `${from},${process.hrtime.bigint() / 1000n}`;
  process.stdout.write(
    `${which}: ${Math.round(r.rate)}/s p50 ${r.p50} ms p99 ${r.p99} ms, non-2xx ${r.non2xx}, stack CPU ${r.cpuMsPerOp.toFixed(3)} ms/op, cores stack/loadgen/db/other ${[r.cpu.target, r.cpu.loadgen, r.cpu.db, r.cpu.others].map((v) => v.toFixed(2)).join("/")}\n`,
  );
} finally {
  await stack.stop();
  await graph.close();
  await db?.drop();
  rmSync(dataDir, { recursive: true, force: true });
}
const main = profiling ? readdirSync(profileDir).filter((f) => /\.0\.\d+\.cpuprofile$/.test(f)) : [];
for (const f of main) process.stdout.write(`node --import tsx scripts/bench/profile-summary.ts ${path.join(profileDir, f)} 40 '' ${window}\n`);
