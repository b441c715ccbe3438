import { createHash } from "node:crypto";
import { mkdirSync } from "node:fs";
import path from "node:path";
import pg from "pg";
import { PGlite } from "@electric-sql/pglite";
import { listenShared } from "./listen.ts";
import { onlyReads } from "./read-only.ts";
import { sqlSpan, tracingEnabled } from "./tracing.ts";
import { retryWithBackoff, type BackoffOptions } from "./backoff.ts";
import type { Logger } from "./logger.ts";
import { DatabaseUnavailableError, isTransientDbError, RETRYABLE_SQLSTATE } from "./transient.ts";

export interface QueryResult<T> {
  rows: T[];
  rowCount: number;
}

/** Anything that runs SQL: the database itself or an open transaction. */
export interface Queryable {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<QueryResult<T>>;
  /** Runs a script of several statements (migrations). */
  exec(sql: string): Promise<void>;
}

export interface Database extends Queryable {
  readonly kind: "pg" | "pglite";
  /** Runs fn in one transaction: committed when fn resolves, rolled back when it throws. */
  tx<T>(fn: (q: Queryable) => Promise<T>): Promise<T>;
  /**
   * Calls onNotify for each NOTIFY on channel (payload text) until the answered function is
   * called. Best effort: a lost connection is re-established, and notifications sent meanwhile are
   * lost, so listeners also poll.
   */
  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>>;
  /** Whether the database answers `SELECT 1` within timeoutMs (readiness and /health). */
  ping(timeoutMs?: number): Promise<boolean>;
  /** The pool's connections (pg; the embedded database has none). */
  poolStats?(): { total: number; idle: number; waiting: number };
  close(): Promise<void>;
}

/**
 * Queries with parameters run as named prepared statements: each connection parses and plans a
 * statement once and then only binds values (our SQL texts are a small fixed set).
 */
const names = new Map<string, string>();
const statementName = (text: string): string => {
  let name = names.get(text);
  if (!name) {
    name = `icv_${createHash("sha1").update(text).digest("hex").slice(0, 20)}`;
    if (names.size < 10_000) names.set(text, name);
  }
  return name;
};
/** Runs of a transaction that hit a serialization failure or deadlock, in all. */
const TX_ATTEMPTS = 3;

/** pg reads a query's own `query_timeout` (its read timeout, ms), which its QueryConfig type leaves out. */
type TimedQuery = pg.QueryConfig & { query_timeout?: number };

const prepared = (text: string, values: unknown[] | undefined, timeoutMs: number): TimedQuery => {
  const q: TimedQuery = values?.length ? { name: statementName(text), text, values } : { text };
  if (timeoutMs > 0) q.query_timeout = timeoutMs;
  return q;
};

/**
 * A failed query (exec'd scripts, i.e. migrations, keep the server's message), as it may be logged: the SQLSTATE code, the constraint and the statement's
 * name, never its parameters, the server's message or detail (they quote the values: phone
 * numbers, codes, links).
 */
export class DatabaseError extends Error {
  constructor(
    readonly code: string,
    readonly constraint: string | undefined,
    readonly statement: string,
  ) {
    super(`database error ${code}${constraint ? ` on ${constraint}` : ""} in statement ${statement}`);
    this.name = "DatabaseError";
  }
}

/**
 * A driver's error (pg or PGlite: SQLSTATE code, message, detail, params…) → DatabaseError; a
 * passing outage (connection lost, server restarting, serialization race) → DatabaseUnavailableError (503).
 */
function safeError(e: unknown, sql: string): unknown {
  if (isTransientDbError(e)) return e instanceof DatabaseUnavailableError ? e : new DatabaseUnavailableError(e);
  const x = e as { code?: unknown; constraint?: unknown } | undefined;
  if (e instanceof DatabaseError || typeof x?.code !== "string" || !/^[0-9A-Z]{5}$/.test(x.code)) return e;
  return new DatabaseError(x.code, typeof x.constraint === "string" ? x.constraint : undefined, statementName(sql));
}

/**
 * Statements sent to a database, per label (the service or `events`), since the process started:
 * every query, BEGIN and COMMIT counts as one. `icv_sql_statements_total` reports it and the bench
 * divides it by proofs; a plain map, so counting costs next to nothing on the hot path.
 */
export const sqlStatementCounts = new Map<string, number>();
const countStatement = (label: string) => sqlStatementCounts.set(label, (sqlStatementCounts.get(label) ?? 0) + 1);

const guarded = async <T>(sql: string, run: () => Promise<T>, label = "other"): Promise<T> => {
  countStatement(label);
  try {
    // tracing on: a span per statement, named by its statement name (no text, no values)
    return await (tracingEnabled() ? sqlSpan(statementName(sql), sql, run) : run());
  } catch (e) {
    throw safeError(e, sql);
  }
};

/** What a probe waits for the database's answer: the health checks' own time limit (checkHealth). */
const PING_TIMEOUT_MS = 2_000;

class PgDatabase implements Database {
  readonly kind = "pg";
  /**
   * @param timeoutMs the time limit of a statement that changes nothing yet (a read; in a
   * transaction, any statement before COMMIT), until its answer (0: none). One that a hung server
   * or a black-holed connection leaves unanswered fails with DatabaseUnavailableError (503) and its
   * connection is dropped, not reused: its late answer would be read as the next statement's, and
   * the server rolls back the transaction it was in.
   */
  constructor(
    private readonly pool: pg.Pool,
    private readonly label: string,
    private readonly timeoutMs: number,
  ) {}

  async ping(timeoutMs = PING_TIMEOUT_MS): Promise<boolean> {
    // the wait for a free connection counts too: a pool held by unanswered statements is down
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
    const answered = guarded("SELECT 1", () => this.pool.query(prepared("SELECT 1", undefined, timeoutMs)), this.label).then(
      (r) => r.rowCount === 1,
      () => false,
    );
    try {
      return await Promise.race([answered, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  poolStats() {
    return { total: this.pool.totalCount, idle: this.pool.idleCount, waiting: this.pool.waitingCount };
  }

  async query<T>(sql: string, params?: unknown[]): Promise<QueryResult<T>> {
    const r = await guarded(sql, () => this.pool.query(prepared(sql, params, onlyReads(sql) ? this.timeoutMs : 0)), this.label);
    return { rows: r.rows as T[], rowCount: r.rowCount ?? 0 };
  }

  async tx<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
    // a serialization failure or deadlock rolled everything back: the transaction runs again
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.txOnce(fn);
      } catch (e) {
        const code = e instanceof DatabaseUnavailableError ? e.reason : undefined;
        if (attempt >= TX_ATTEMPTS || !code || !RETRYABLE_SQLSTATE.test(code)) throw e;
      }
    }
  }

  private async txOnce<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
    const client = await this.pool.connect().catch((e) => Promise.reject(safeError(e, "BEGIN")));
    // a held client has no listener of the pool's: a server restart would emit an unhandled
    // 'error' (and end the process); the broken client is dropped at release instead of reused
    let broken: Error | undefined;
    const onError = (err: Error) => void (broken = err);
    client.on("error", onError);
    try {
      await guarded("BEGIN", () => client.query(prepared("BEGIN", undefined, this.timeoutMs)), this.label);
      const q: Queryable = {
        query: async <R>(sql: string, params?: unknown[]) => {
          const r = await guarded(sql, () => client.query(prepared(sql, params, this.timeoutMs)), this.label);
          return { rows: r.rows as R[], rowCount: r.rowCount ?? 0 };
        },
        // without parameters pg uses the simple protocol, which runs several statements
        exec: async (sql: string) => void (await client.query(sql).catch((e) => Promise.reject(isTransientDbError(e) ? safeError(e, sql) : e))),
      };
      const out = await fn(q);
      await guarded("COMMIT", () => client.query("COMMIT"), this.label);
      return out;
    } catch (e) {
      // a lost connection is dropped; a serialization race or lock timeout leaves it usable
      if (isTransientDbError(e) && !/^(40|55)/.test(e instanceof DatabaseUnavailableError ? e.reason : "")) broken ??= e as Error;
      if (!broken) {
        countStatement(this.label);
        await client.query(prepared("ROLLBACK", undefined, this.timeoutMs)).catch(onError);
      }
      throw e;
    } finally {
      client.removeListener("error", onError);
      client.release(broken);
    }
  }

  async exec(sql: string): Promise<void> {
    // migrations keep the server's message, except for an outage (503, retried at start)
    await this.pool.query(sql).catch((e) => Promise.reject(isTransientDbError(e) ? safeError(e, sql) : e));
  }

  // LISTEN needs a session of its own: one per process and database, shared by every channel (listen.ts)
  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>> {
    return listenShared(this.pool.options, channel, onNotify);
  }

  private closed = false;
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }
}

type PGliteTx = Parameters<Parameters<PGlite["transaction"]>[0]>[0];

const wrapPglite = (q: PGlite | PGliteTx, label: string): Queryable => ({
  async query<T>(sql: string, params?: unknown[]) {
    const r = await guarded(sql, () => q.query<T>(sql, params as unknown[]), label);
    return { rows: r.rows, rowCount: Math.max(r.rows.length, r.affectedRows ?? 0) };
  },
  async exec(sql: string) {
    await q.exec(sql);
  },
});

class PgliteDatabase implements Database {
  readonly kind = "pglite";
  private readonly q: Queryable;
  private closed = false;
  constructor(
    private readonly db: PGlite,
    private readonly release: () => Promise<void>,
    private readonly label: string,
  ) {
    this.q = wrapPglite(db, label);
  }
  query<T>(sql: string, params?: unknown[]): Promise<QueryResult<T>> {
    return this.q.query<T>(sql, params);
  }
  tx<T>(fn: (q: Queryable) => Promise<T>): Promise<T> {
    // BEGIN and COMMIT (or ROLLBACK) are two statements of their own
    countStatement(this.label);
    countStatement(this.label);
    return this.db.transaction((t) => fn(wrapPglite(t, this.label)));
  }
  exec(sql: string): Promise<void> {
    return this.q.exec(sql);
  }
  async ping(): Promise<boolean> {
    return (await this.db.query("SELECT 1").catch(() => undefined))?.rows.length === 1;
  }
  async listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>> {
    const unlisten = await this.db.listen(channel, onNotify);
    return async () => {
      if (!this.db.closed) await unlisten();
    };
  }
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.release();
  }
}

// timestamptz, jsonb and int4 come back as Date, object and number from both drivers;
// int8 (counts) is cast to int in SQL so neither returns a bigint or a string.

export interface OpenDatabaseOptions {
  /** postgres:// URL; when absent PGlite is used. */
  url?: string;
  /** PGlite data directory, or "memory://" for an in-memory database. */
  dataDir?: string;
  poolMax?: number;
  /** How long a read, or a transaction's statement before COMMIT, waits for its answer, ms (pg only): DATABASE_QUERY_TIMEOUT_MS. 0 or absent: none. */
  queryTimeoutMs?: number;
  /** Who uses it (a service name, `events`): the label its statements are counted under. */
  label?: string;
  /**
   * Waits for an unreachable Postgres (connection refused, server starting…) with backoff,
   * logging each failed try, instead of failing at once.
   */
  wait?: BackoffOptions & { logger: Logger };
  /** The embedded database in a data directory: ms between its vacuums (vacuumEmbedded; hourly by default). */
  vacuumEveryMs?: number;
}

/** Opens the configured database: a pg Pool when a URL is given, else embedded PGlite. */
export async function openDatabase(opts: OpenDatabaseOptions): Promise<Database> {
  if (opts.url) {
    // a connect that hangs (a failover, a black-holed address) fails after 5 s instead of forever
    const pool = new pg.Pool({
      connectionString: opts.url,
      max: opts.poolMax ?? 10,
      idleTimeoutMillis: 30_000,
      connectionTimeoutMillis: 5_000,
      keepAlive: true,
    });
    pool.on("error", () => undefined); // an idle client's error: the pool drops it, the next query opens a new one
    const db = new PgDatabase(pool, opts.label ?? "other", opts.queryTimeoutMs ?? 0);
    const { wait } = opts;
    try {
      await retryWithBackoff(() => db.query("SELECT 1"), {
        ...wait,
        retryable: (e) => !!wait && isTransientDbError(e),
        onRetry: (e, attempt, delay) =>
          wait?.logger.warn(
            { reason: (e as DatabaseUnavailableError).reason, attempt: attempt + 1, retry_in_ms: delay },
            "database not reachable yet; waiting",
          ),
      });
    } catch (e) {
      await pool.end().catch(() => undefined);
      throw e;
    }
    return db;
  }
  const dir = opts.dataDir ?? "memory://";
  if (dir.startsWith("memory://")) {
    const lite = await PGlite.create(dir, PGLITE_OPTIONS);
    return new PgliteDatabase(lite, () => lite.close(), opts.label ?? "other");
  }
  return sharedPglite(path.resolve(dir), opts.label ?? "other", opts.vacuumEveryMs ?? VACUUM_EVERY_MS, opts.wait?.logger);
}

// The embedded database serves one developer's laptop or a test: Postgres's default 128 MB of
// shared buffers would be most of the process's memory.
const PGLITE_OPTIONS = { postgresqlconf: "shared_buffers = 16MB\n" } as const;

const VACUUM_EVERY_MS = 3600_000;

/**
 * What autovacuum does on a Postgres server, done for the embedded database, which has no
 * background workers: the space of dead rows (outbox events pruned every hour, the old versions
 * of updated rows) made reusable, and the planner's statistics refreshed. Without it the data
 * directory grows for as long as the process runs, whatever is deleted. PGlite runs on the
 * process's thread, so the process pauses while it runs: 0.2–0.7 s for a 120 MB table (the vacuum
 * skips the pages unchanged since the last one; the analyze samples at most 30,000 rows a table).
 */
export async function vacuumEmbedded(db: { exec(sql: string): Promise<unknown> }): Promise<void> {
  await db.exec("VACUUM (ANALYZE)");
}

type SharedLite = { lite: Promise<PGlite>; users: number; vacuum?: NodeJS.Timeout };
const shared = new Map<string, SharedLite>();

/**
 * One PGlite per data directory and process: the services of the all-in-one process share it
 * (each in its own schema), which keeps memory and start time to one embedded Postgres. It is
 * closed when its last user closes. PGlite is single-process: two processes need two DATA_DIRs.
 */
async function sharedPglite(dir: string, label: string, vacuumEveryMs: number, logger?: Logger): Promise<Database> {
  let entry = shared.get(dir);
  if (!entry) {
    mkdirSync(dir, { recursive: true });
    const created: SharedLite = { lite: PGlite.create(dir, PGLITE_OPTIONS), users: 0 };
    entry = created;
    shared.set(dir, entry);
    entry.lite.then(
      (lite) => {
        created.vacuum = setInterval(() => {
          const began = performance.now();
          vacuumEmbedded(lite).then(
            () => logger?.info({ ms: Math.round(performance.now() - began) }, "embedded database vacuumed"),
            (err: Error) => logger?.warn({ reason: err.message }, "embedded database vacuum failed; the next one tries again"),
          );
        }, vacuumEveryMs).unref();
      },
      () => shared.delete(dir),
    );
  }
  entry.users++;
  const lite = await entry.lite;
  const e = entry;
  return new PgliteDatabase(
    lite,
    async () => {
      if (--e.users > 0) return;
      shared.delete(dir);
      clearInterval(e.vacuum);
      await lite.close();
    },
    label,
  );
}
