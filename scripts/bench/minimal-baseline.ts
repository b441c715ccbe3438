// Issue 33's baseline: ICV's create + test-verify and the minimal durable issuer's
// (minimal-issuer.ts), back to back on the same database server with the same client, in
// BENCH_BASELINE_ROUNDS rounds (default 3). Each round prints both rates and their ratio, with
// SQL statements and Postgres execution time per proof (pg_stat_statements) and the Postgres
// servers' CPU per proof; the last round's costliest statements follow, for both.
import { spawn } from "node:child_process";
import { once } from "node:events";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { BenchCase } from "./case.ts";
import { loadCreateAndVerify, type LoadResult } from "./load.ts";
import { analyze, databasesLike, perProof, readStatements, resetStatements, statementsAvailable } from "./pg-stats.ts";
import { perSec, type Row } from "./report.ts";
import { freshPostgres } from "./stack.ts";

const here = path.dirname(fileURLToPath(import.meta.url));

async function startIssuer(databaseUrl: string, key: string): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const child = spawn(process.execPath, ["--import", "tsx", path.join(here, "minimal-issuer.ts")], {
    env: { ...process.env, DATABASE_URL: databaseUrl, ISSUER_KEY: key },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout.setEncoding("utf8");
  const port = await new Promise<number>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`the minimal issuer exited (${code})`)));
    child.stdout.on("data", (d: string) => {
      out += d;
      const m = /listening (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid!,
    async stop() {
      if (child.exitCode !== null) return;
      child.kill("SIGTERM");
      await once(child, "exit");
    },
  };
}

/** Postgres servers' CPU ms per proof over a run (the machine's postgres + redis processes). */
const dbCpuMs = (r: LoadResult & { proofs: number }, seconds: number) => (r.cpu.db * seconds * 1000) / Math.max(1, r.proofs);

export const minimalBaselineCase: BenchCase = {
  name: "minimal issuer",
  async run(ctx) {
    const server = process.env.DATABASE_URL;
    if (ctx.mode !== "postgres" || !server || !ctx.databaseUrl)
      return { rows: [], figures: {}, notes: ["minimal issuer: Postgres mode only (it measures the database server)"] };
    const rounds = Number(process.env.BENCH_BASELINE_ROUNDS ?? 3);
    const notes: string[] = [];
    const unavailable = await statementsAvailable(server);
    if (unavailable) notes.push(unavailable);
    const icvDb = new URL(ctx.databaseUrl).pathname.slice(1);
    const db = await freshPostgres(server);
    const issuer = await startIssuer(db.url, ctx.testKey);
    const rows: Row[] = [];
    const figures: Record<string, number> = {};
    const base = { connections: ctx.connections, duration: ctx.duration, pipelining: 1, timeout: 10 };
    try {
      // the stack's own databases are icvDb (and, with per-service databases, those sharing its name)
      const icvDbs = (await databasesLike(server, icvDb)).filter((n) => n !== db.name);
      // both sides run a while, then both databases are analyzed: the rounds measure the steady
      // state of a running system, not a fresh database's first seconds
      for (const [url, label] of [
        [ctx.stack.url, "ICV"],
        [issuer.url, "minimal issuer"],
      ])
        await loadCreateAndVerify({ url, ...base, duration: Math.max(2, ctx.warmup) }, ctx.testKey, 0, `settling: ${label}`);
      await analyze(server, [...icvDbs, db.name]);
      let lastTables: string[] = [];
      for (let i = 1; i <= rounds; i++) {
        const measured = async (url: string, dbs: string[], target: () => number | undefined, label: string) => {
          if (!unavailable) await resetStatements(server);
          const r = await loadCreateAndVerify({ url, ...base }, ctx.testKey, ctx.warmup, label, target);
          const stats = unavailable ? undefined : perProof(await readStatements(server, dbs), r.proofs);
          return { r, stats };
        };
        const icv = await measured(ctx.stack.url, icvDbs, () => ctx.stack.mainPid(), `round ${i}: ICV create + test-verify`);
        const min = await measured(issuer.url, [db.name], () => issuer.pid, `round ${i}: minimal issuer create + test-verify`);
        const ratio = icv.r.rate / min.r.rate;
        const detail = (x: typeof icv) =>
          `${x.stats ? `${x.stats.sql.toFixed(1)} SQL, ${x.stats.ms.toFixed(2)} ms exec, ${Math.round(x.stats.wal)} B WAL, ` : ""}${dbCpuMs(x.r, ctx.duration).toFixed(2)} ms db CPU per proof`;
        rows.push(
          {
            name: `round ${i}: minimal durable issuer`,
            rate: perSec(min.r.rate, "proofs/s"),
            p50: min.r.p50,
            p99: min.r.p99,
            ratio: detail(min),
            target: "(baseline)",
            errors: min.r.non2xx + min.r.errors,
            cpu: min.r.cpu,
            cpuMsPerOp: min.r.cpuMsPerOp,
          },
          {
            name: `round ${i}: ICV, ratio to it ${ratio.toFixed(2)}`,
            rate: perSec(icv.r.rate, "proofs/s"),
            p50: icv.r.p50,
            p99: icv.r.p99,
            ratio: detail(icv),
            target: "ratio ≥ 0.6",
            pass: ratio >= 0.6,
            errors: icv.r.non2xx + icv.r.errors,
            cpu: icv.r.cpu,
            cpuMsPerOp: icv.r.cpuMsPerOp,
          },
        );
        figures[`ratio_round_${i}`] = ratio;
        figures[`icv_proofs_per_s_round_${i}`] = icv.r.rate;
        figures[`minimal_proofs_per_s_round_${i}`] = min.r.rate;
        if (icv.stats && min.stats) lastTables = [`ICV, round ${i}:\n${icv.stats.table}`, `minimal issuer, round ${i}:\n${min.stats.table}`];
      }
      const ratios = Array.from({ length: rounds }, (_, k) => figures[`ratio_round_${k + 1}`]);
      figures.ratio_median = ratios.sort((a, b) => a - b)[Math.floor(rounds / 2)];
      notes.push(...lastTables);
    } finally {
      await issuer.stop();
      await db.drop();
    }
    return { rows, figures, notes };
  },
};
