// Issue 26's bench cases. The SD-JWT VC beside the JWT: create + test-verify with proof_format jwt,
// then sd-jwt-vc twice, then jwt (A B B A), on the same stack; the figure is the SD-JWT VC's extra CPU per proof
// of the stack's process (target: at most 15 % more than a JWT proof). The Token Status List:
// fetches per second of one list (every list holds 100,000 entries), and the time from a revoke's
// answer to a served list that shows it (the list cached before the revoke).
import { getListFromStatusListJWT } from "@sd-jwt/jwt-status-list";
import type { BenchCase, BenchContext } from "./case.ts";
import { load, loadCreateAndVerify } from "./load.ts";
import { perSec, pct, type Row } from "./report.ts";

/** One proof of the test key: create + test-verify; its id and JWT. */
async function proof(ctx: BenchContext, extra: Record<string, unknown> = {}): Promise<{ id: string; token: string }> {
  const headers = { authorization: `Bearer ${ctx.testKey}`, "content-type": "application/json" };
  const body = JSON.stringify({ type: "phone", channel: "telegram", identifier: "+37069199199", ...extra });
  const v = (await (await fetch(`${ctx.stack.url}/api/v1/verifications`, { method: "POST", headers, body })).json()) as { id: string };
  const done = (await (await fetch(`${ctx.stack.url}/api/v1/verifications/${v.id}/test-verify`, { method: "POST", headers })).json()) as {
    proof_token: string;
  };
  return { id: v.id, token: done.proof_token };
}

const entryOf = (token: string) =>
  (JSON.parse(Buffer.from(token.split(".")[1], "base64url").toString()) as { status: { status_list: { idx: number; uri: string } } }).status.status_list;

type Run = Awaited<ReturnType<typeof loadCreateAndVerify>>;

/** Two runs of one format as one: rates and CPU per proof over both, the worse latencies. */
const both = (x: Run, y: Run) => {
  const proofs = x.proofs + y.proofs;
  const seconds = x.cpu.targetSeconds + y.cpu.targetSeconds;
  return {
    rate: (x.rate + y.rate) / 2,
    p50: Math.max(x.p50, y.p50),
    p99: Math.max(x.p99, y.p99),
    errors: x.non2xx + x.errors + y.non2xx + y.errors,
    cpu: x.cpu,
    cpuMsPerOp: (seconds * 1000) / Math.max(1, proofs),
  };
};

export const sdJwtVcCase: BenchCase = {
  name: "SD-JWT VC issuing",
  async run(ctx) {
    // A B B A, each half the case's time: a stack's CPU per proof drifts as its tables grow, and
    // a drift that is linear in time costs both formats the same in this order
    const base = { url: ctx.stack.url, connections: ctx.connections, duration: ctx.duration / 2, pipelining: 1, timeout: 10 };
    const target = () => ctx.stack.mainPid();
    const run = (format: "jwt" | "sd-jwt-vc", warmup: number) =>
      loadCreateAndVerify(base, ctx.testKey, warmup, `create + test-verify, proof_format ${format}`, target, { proof_format: format });
    const a1 = await run("jwt", ctx.warmup);
    const b1 = await run("sd-jwt-vc", ctx.warmup);
    const b2 = await run("sd-jwt-vc", 0);
    const a2 = await run("jwt", 0);
    const jwt = both(a1, a2);
    const sd = both(b1, b2);
    const extra = sd.cpuMsPerOp / jwt.cpuMsPerOp - 1;
    const rows: Row[] = [
      {
        name: "create + test-verify, JWT (this case)",
        rate: perSec(jwt.rate, "proofs/s"),
        p50: jwt.p50,
        p99: jwt.p99,
        target: "(info)",
        cpuMsPerOp: jwt.cpuMsPerOp,
      },
      {
        name: "create + test-verify, SD-JWT VC beside the JWT",
        rate: perSec(sd.rate, "proofs/s"),
        p50: sd.p50,
        p99: sd.p99,
        ratio: `${extra >= 0 ? "+" : ""}${pct(extra)} CPU per proof`,
        target: "≤ +15 % CPU per proof",
        pass: extra <= 0.15,
        errors: sd.errors,
        cpu: sd.cpu,
        cpuMsPerOp: sd.cpuMsPerOp,
      },
    ];
    return { rows, figures: { jwt_proofs_per_s: jwt.rate, sd_jwt_vc_proofs_per_s: sd.rate, sd_jwt_vc_extra_cpu: extra } };
  },
};

export const statusListCase: BenchCase = {
  name: "status list",
  async run(ctx) {
    const first = entryOf((await proof(ctx)).token);
    const path = new URL(first.uri).pathname;
    const fetches = await load(
      {
        label: `GET ${path} (100,000 entries)`,
        url: `${ctx.stack.url}${path}`,
        connections: ctx.connections,
        duration: ctx.duration,
        pipelining: 1,
        timeout: 10,
        target: () => ctx.stack.mainPid(),
      },
      ctx.warmup,
    );
    // revoke → a served list that shows it, five times (the list read, so cached, before each revoke)
    const latencies: number[] = [];
    for (let i = 0; i < 5; i++) {
      const p = await proof(ctx, { proof_format: i % 2 ? "sd-jwt-vc" : "jwt" });
      const e = entryOf(p.token);
      const url = `${ctx.stack.url}${new URL(e.uri).pathname}`;
      const value = async () => getListFromStatusListJWT(await (await fetch(url)).text()).getStatus(e.idx);
      await value();
      await fetch(`${ctx.stack.url}/api/v1/proofs/${p.id}/revoke`, {
        method: "POST",
        headers: { authorization: `Bearer ${ctx.testKey}`, "content-type": "application/json" },
        body: '{"reason":"other"}',
      });
      const t0 = performance.now();
      while ((await value()) !== 1) {
        if (performance.now() - t0 > 10_000) throw new Error("the revocation never showed in the list");
        await new Promise((r) => setTimeout(r, 5));
      }
      latencies.push(performance.now() - t0);
    }
    latencies.sort((a, b) => a - b);
    const rows: Row[] = [
      {
        name: "GET a status list (100,000 entries)",
        rate: perSec(fetches.rate, "fetches/s"),
        p50: fetches.p50,
        p99: fetches.p99,
        target: "(info)",
        errors: fetches.non2xx + fetches.errors,
        cpu: fetches.cpu,
        cpuMsPerOp: fetches.cpuMsPerOp,
      },
      {
        name: "revoke → the list shows it (5 revokes)",
        ratio: `median ${latencies[2].toFixed(0)} ms, max ${latencies[4].toFixed(0)} ms`,
        target: "≤ 5,000 ms",
        pass: latencies[4] <= 5000,
      },
    ];
    return { rows, figures: { status_list_fetches_per_s: fetches.rate, revoke_to_list_ms_median: latencies[2], revoke_to_list_ms_max: latencies[4] } };
  },
};
