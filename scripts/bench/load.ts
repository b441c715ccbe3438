// autocannon runs, in the bench process, reduced to the numbers the table shows.
import autocannon from "autocannon";
import { cpuWindow, type CpuWindow } from "./cpu.ts";

export interface LoadResult {
  /** mean requests (or, for a chained case, completed iterations) per second */
  rate: number;
  p50: number;
  p99: number;
  requests: number;
  non2xx: number;
  errors: number;
  mismatches: number;
  statusCodes: Record<string, number>;
  cpu: CpuWindow;
  /** CPU ms of the process under test per request (per proof for the chained case) */
  cpuMsPerOp: number;
}

type Chain = { id?: string };

/** `target` names the process under test, for the CPU accounting. */
export type LoadOptions = autocannon.Options & { label: string; target?: () => number | undefined };

function summarize(r: autocannon.Result, cpu: CpuWindow, completed?: number): LoadResult {
  const ops = completed ?? r.requests.total;
  const statusCodes: Record<string, number> = {};
  const stats = (r as unknown as { statusCodeStats?: Record<string, { count: number }> }).statusCodeStats ?? {};
  for (const [code, s] of Object.entries(stats)) statusCodes[code] = Number(s.count);
  return {
    rate: completed === undefined ? r.requests.average : completed / r.duration,
    p50: r.latency.p50,
    p99: r.latency.p99,
    requests: r.requests.total,
    non2xx: r.non2xx,
    errors: r.errors,
    mismatches: r.mismatches,
    statusCodes,
    cpu,
    cpuMsPerOp: ops > 0 ? (cpu.targetSeconds * 1000) / ops : NaN,
  };
}

async function run(opts: autocannon.Options): Promise<autocannon.Result> {
  const instance = autocannon(opts);
  return await instance;
}

/** A warm-up of `warmupSec`, then the measured run. */
export async function load(opts: LoadOptions, warmupSec: number): Promise<LoadResult> {
  const { label, target, ...rest } = opts;
  process.stderr.write(`  ${label} …\n`);
  if (warmupSec > 0) await run({ ...rest, duration: warmupSec, overallRate: undefined });
  const window = cpuWindow(target);
  const r = await run(rest);
  return summarize(r, window());
}

/**
 * create + test-verify in a chain on every connection: POST /api/v1/verifications, then
 * POST /api/v1/verifications/{id}/test-verify with the id the first answer carried. Counts
 * test-verify answers that hold a proof token (= proofs signed). `extra`: more create fields
 * (proof_format, holder_key).
 */
export async function loadCreateAndVerify(
  base: autocannon.Options,
  testKey: string,
  warmupSec: number,
  label: string,
  target?: () => number | undefined,
  extra: Record<string, unknown> = {},
): Promise<LoadResult & { proofs: number }> {
  let proofs = 0;
  let counting = false;
  const body = JSON.stringify({ type: "phone", channel: "telegram", identifier: "+37069199199", external_user_id: "bench-user", ...extra });
  const opts = (duration: number): autocannon.Options => ({
    ...base,
    duration,
    headers: { authorization: `Bearer ${testKey}` },
    requests: [
      {
        method: "POST",
        path: "/api/v1/verifications",
        headers: { authorization: `Bearer ${testKey}`, "content-type": "application/json" },
        body,
        onResponse(status, resBody, context) {
          (context as Chain).id = status === 201 ? (JSON.parse(resBody) as { id: string }).id : undefined;
        },
      },
      {
        method: "POST",
        headers: { authorization: `Bearer ${testKey}` },
        setupRequest(req, context) {
          const { id } = context as Chain;
          if (!id) return undefined as never; // the create failed: start the chain again
          return { ...req, path: `/api/v1/verifications/${id}/test-verify` };
        },
        onResponse(status, resBody) {
          if (counting && status === 200 && (JSON.parse(resBody) as { proof_token?: string }).proof_token) proofs++;
        },
      },
    ],
  });
  process.stderr.write(`  ${label} …\n`);
  if (warmupSec > 0) await run(opts(warmupSec));
  counting = true;
  const window = cpuWindow(target);
  const r = await run(opts(Number(base.duration)));
  const cpu = window();
  counting = false;
  return { ...summarize(r, cpu, proofs), proofs };
}
