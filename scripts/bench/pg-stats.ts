// Where Postgres time goes, per statement (issue 33): pg_stat_statements of one database over a
// window, divided by the proofs made in it. The extension needs `shared_preload_libraries =
// 'pg_stat_statements'` on the server (a restart); without it the bench says so and goes on.
import pg from "pg";
import { setTimeout as sleep } from "node:timers/promises";

export interface StatementCost {
  query: string;
  calls: number;
  totalMs: number;
  rows: number;
  walBytes: number;
}

async function withClient<T>(url: string, f: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await f(c);
  } finally {
    await c.end();
  }
}

/** Whether pg_stat_statements can be read on this server (created in `url`'s database if needed). */
export async function statementsAvailable(url: string): Promise<string | undefined> {
  try {
    await withClient(url, async (c) => {
      await c.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
      await c.query("SELECT 1 FROM pg_stat_statements LIMIT 1");
    });
    return undefined;
  } catch (e) {
    return `pg_stat_statements unavailable (${(e as Error).message.slice(0, 120)}); enable it with ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements' and a restart`;
  }
}

/** Clears the server's statement statistics (every database's). */
export const resetStatements = (url: string) => withClient(url, (c) => c.query("SELECT pg_stat_statements_reset()"));

/** The statements run in the databases named, since the last reset, costliest first. */
export async function readStatements(url: string, databases: string[]): Promise<StatementCost[]> {
  return withClient(url, async (c) => {
    const r = await c.query(
      `SELECT s.query, sum(s.calls)::float8 AS calls, sum(s.total_exec_time)::float8 AS total_ms, sum(s.rows)::float8 AS rows,
              sum(s.wal_bytes)::float8 AS wal
         FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
        WHERE d.datname = ANY($1::text[]) AND s.query NOT ILIKE '%pg_stat_statements%'
        GROUP BY s.query ORDER BY 3 DESC`,
      [databases],
    );
    return r.rows.map((x) => ({ query: x.query as string, calls: x.calls, totalMs: x.total_ms, rows: x.rows, walBytes: x.wal }));
  });
}

/**
 * ANALYZE of each database named, as autovacuum does within a minute of a table's first 50 changes
 * on a running system: the bench's databases are fresh, and their statements would otherwise be
 * planned (and their generic plans cached) on tables that look empty.
 */
export async function analyze(url: string, databases: string[]): Promise<void> {
  for (const name of databases) {
    const u = new URL(url);
    u.pathname = `/${name}`;
    await withClient(u.toString(), (c) => c.query("ANALYZE"));
  }
}

/**
 * Waits until no statement runs in the database `name` (at most maxMs) and answers the ms waited.
 * A stopped stack's statements run on in Postgres until they finish (a backend learns that its
 * client left only when it answers): a figure taken meanwhile would share the machine with them.
 */
export async function untilQuiet(url: string, name: string, maxMs: number): Promise<number> {
  const t0 = performance.now();
  await withClient(url, async (c) => {
    while (performance.now() - t0 < maxMs) {
      const r = await c.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND state = 'active' AND pid <> pg_backend_pid()", [name]);
      if (r.rows[0].n === 0) return;
      await sleep(200);
    }
  });
  return performance.now() - t0;
}

/** Every database of the server whose name starts with `prefix` (the bench's fresh ones). */
export const databasesLike = (url: string, prefix: string) =>
  withClient(url, async (c) => (await c.query("SELECT datname FROM pg_database WHERE datname LIKE $1", [`${prefix}%`])).rows.map((r) => r.datname as string));

/** Totals per proof, and a table of the costliest statements per proof. */
export function perProof(stats: StatementCost[], proofs: number, top = 12): { sql: number; ms: number; wal: number; table: string } {
  const sum = (f: (s: StatementCost) => number) => stats.reduce((a, s) => a + f(s), 0) / Math.max(1, proofs);
  const oneLine = (q: string) => q.replace(/\s+/g, " ").trim().slice(0, 90);
  const lines = stats.slice(0, top).map(
    (s) =>
      `  ${(s.totalMs / proofs).toFixed(3).padStart(7)} ms  ${(s.calls / proofs).toFixed(2).padStart(6)} calls  ${(s.rows / proofs).toFixed(2).padStart(6)} rows  ${Math.round(
        s.walBytes / proofs,
      )
        .toString()
        .padStart(6)} B WAL  ${oneLine(s.query)}`,
  );
  return {
    sql: sum((s) => s.calls),
    ms: sum((s) => s.totalMs),
    wal: sum((s) => s.walBytes),
    table: ["  per proof: exec time, calls, rows, WAL, statement", ...lines].join("\n"),
  };
}
