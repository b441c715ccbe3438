// Issue 33's baseline: ICV's create + test-verify and the minimal durable issuer's
// (minimal-issuer.ts), back to back on the same database server with the same client, in
// BENCH_BASELINE_ROUNDS rounds (default 3). Each round prints both rates and their ratio, with
// SQL statements and Postgres execution time per proof (pg_stat_statements) and the Postgres
// servers' CPU per proof; the last round's costliest statements follow, for both. Embedded, the
// minimal issuer runs on a PGlite of its own in its own process, as ICV's embedded default does.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { BenchCase } from "./case.ts";
import { loadCreateAndVerify, type LoadResult } from "./load.ts";
import { analyze, databasesLike, perProof, readStatements, resetStatements, statementsAvailable } from "./pg-stats.ts";
import { perSec, type Row } from "./report.ts";
import { freshPostgres, startBaseline } from "./stack.ts";

/** Postgres servers' CPU ms per proof over a run (the machine's postgres + redis processes). */
const dbCpuMs = (r: LoadResult & { proofs: number }, seconds: number) => (r.cpu.db * seconds * 1000) / Math.max(1, r.proofs);

export const minimalBaselineCase: BenchCase = {
  name: "minimal issuer",
  async run(ctx) {
    // Postgres: the issuer gets a database of its own on the stack's server; embedded, a PGlite of its own
    const server = ctx.mode === "postgres" ? process.env.DATABASE_URL : undefined;
    if (ctx.mode === "postgres" && (!server || !ctx.databaseUrl)) return { rows: [], figures: {}, notes: ["minimal issuer: DATABASE_URL is needed"] };
    const rounds = Number(process.env.BENCH_BASELINE_ROUNDS ?? 3);
    const notes: string[] = [];
    const unavailable = server && (await statementsAvailable(server));
    if (unavailable) notes.push(unavailable);
    // the server whose pg_stat_statements the rounds read: none embedded, or without the extension
    const statsOn = unavailable ? undefined : server;
    const db = server ? await freshPostgres(server) : undefined;
    const liteDir = db ? undefined : mkdtempSync(path.join(tmpdir(), "icv-minimal-"));
    const issuer = await startBaseline("minimal-issuer.ts", [], {
      ...(db ? { DATABASE_URL: db.url } : { DATABASE_URL: undefined, ISSUER_PGLITE_DIR: liteDir }),
      ISSUER_KEY: ctx.testKey,
    });
    const rows: Row[] = [];
    const figures: Record<string, number> = {};
    const base = { connections: ctx.connections, duration: ctx.duration, pipelining: 1, timeout: 10 };
    try {
      // the stack's own databases: its database (and, with per-service databases, those sharing its name)
      const icvDbs = server ? (await databasesLike(server, new URL(ctx.databaseUrl!).pathname.slice(1))).filter((n) => n !== db!.name) : [];
      // both sides run a while, then both databases are analyzed: the rounds measure the steady
      // state of a running system, not a fresh database's first seconds
      for (const [url, label] of [
        [ctx.stack.url, "ICV"],
        [issuer.url, "minimal issuer"],
      ])
        await loadCreateAndVerify({ url, ...base, duration: Math.max(2, ctx.warmup) }, ctx.testKey, 0, `settling: ${label}`);
      if (server) await analyze(server, [...icvDbs, db!.name]);
      let lastTables: string[] = [];
      for (let i = 1; i <= rounds; i++) {
        const measured = async (url: string, dbs: string[], target: () => number | undefined, label: string) => {
          if (statsOn) await resetStatements(statsOn);
          const r = await loadCreateAndVerify({ url, ...base }, ctx.testKey, ctx.warmup, label, target);
          const stats = statsOn ? perProof(await readStatements(statsOn, dbs), r.proofs) : undefined;
          return { r, stats };
        };
        const icv = await measured(ctx.stack.url, icvDbs, () => ctx.stack.mainPid(), `round ${i}: ICV create + test-verify`);
        const min = await measured(issuer.url, db ? [db.name] : [], () => issuer.pid, `round ${i}: minimal issuer create + test-verify`);
        const ratio = icv.r.rate / min.r.rate;
        const detail = (x: typeof icv) =>
          server
            ? `${x.stats ? `${x.stats.sql.toFixed(1)} SQL, ${x.stats.ms.toFixed(2)} ms exec, ${Math.round(x.stats.wal)} B WAL, ` : ""}${dbCpuMs(x.r, ctx.duration).toFixed(2)} ms db CPU per proof`
            : "PGlite in the process";
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
      await db?.drop();
      if (liteDir) rmSync(liteDir, { recursive: true, force: true });
    }
    return { rows, figures, notes };
  },
};
