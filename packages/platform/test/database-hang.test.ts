// What a query does when Postgres hangs (every process of a server of the test's own stopped:
// connected, answering nothing). A read gives up after the query timeout with a 503 error and
// its connection is dropped; a statement that may change data waits for the answer, so that a
// retry never does it twice; in a transaction every statement before COMMIT gives up, and the
// server rolls the transaction back. Migrations (exec) have no limit.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase, type Database } from "../src/database.ts";
import { DatabaseUnavailableError } from "../src/transient.ts";
import { havePostgresBinaries, privatePostgres, type PrivatePostgres } from "../../../test/support/private-servers.ts";

let pg: PrivatePostgres | undefined;
let db: Database | undefined;

beforeAll(async () => {
  if (!havePostgresBinaries) return;
  pg = await privatePostgres();
  db = await openDatabase({ url: pg.url, poolMax: 4, queryTimeoutMs: 300 });
  await db.exec("CREATE TABLE t (id int PRIMARY KEY)");
});
afterAll(async () => {
  pg?.resume();
  await db?.close();
  pg?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const settled = <T>(p: Promise<T>): Promise<{ value?: T; error?: unknown }> =>
  p.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );

/**
 * Runs `during` with the server frozen, and lets it go on afterwards whatever happens. The pool's
 * four connections are opened first: a connection asked for while it hangs fails after 5 s.
 */
async function whileHung<T>(during: () => Promise<T>): Promise<T> {
  await Promise.all(Array.from({ length: 4 }, () => db!.query("SELECT pg_sleep(0.05)")));
  expect(db!.poolStats!()).toMatchObject({ total: 4, idle: 4 });
  pg!.pause();
  try {
    return await during();
  } finally {
    pg!.resume();
  }
}

describe.skipIf(!havePostgresBinaries)("a Postgres that hangs (skipped: no postgres binaries)", () => {
  it("gives up on a read after the timeout (503, reason query_timeout) and drops its connection", async () => {
    expect(await db!.ping()).toBe(true);
    const read = await whileHung(async () => {
      const began = Date.now();
      const r = await settled(db!.query("SELECT count(*)::int AS n FROM t"));
      // its connection is gone from the pool: the late answer is never read as another query's
      expect(db!.poolStats!().total).toBe(3);
      return { ...r, ms: Date.now() - began };
    });
    expect(read.error).toBeInstanceOf(DatabaseUnavailableError);
    expect((read.error as DatabaseUnavailableError).reason).toBe("query_timeout");
    expect(read.ms).toBeGreaterThanOrEqual(280);
    expect(read.ms).toBeLessThan(3_000);
    expect((await db!.query<{ n: number }>("SELECT count(*)::int AS n FROM t")).rows).toEqual([{ n: 0 }]);
  });

  /** Sends `sql` while the server hangs: it is still unanswered after three times the timeout; answers what it answered once the server goes on. */
  async function waitsWhileHung<T>(sql: string): Promise<{ value?: { rows: T[]; rowCount: number }; error?: unknown }> {
    let answered = false;
    const sent = await whileHung(async () => {
      const pending = settled(db!.query<T>(sql));
      void pending.then(() => (answered = true));
      await sleep(1_000); // three times the timeout
      expect(answered).toBe(false);
      return { pending }; // wrapped: the server goes on only once this returns
    });
    return sent.pending;
  }

  it("lets a write wait for its answer while the server hangs, and it is done once when it answers", async () => {
    expect(await waitsWhileHung("INSERT INTO t (id) VALUES (1)")).toEqual({ value: { rows: [], rowCount: 1 } });
    expect((await db!.query("SELECT id FROM t")).rows).toEqual([{ id: 1 }]);
  });

  it("lets a SELECT of a schema-qualified function wait as a write: such a function may write (the relays' outbox_stamp)", async () => {
    await db!.exec("CREATE FUNCTION public.add_row(n int) RETURNS int LANGUAGE sql AS 'INSERT INTO t (id) VALUES (n) RETURNING id'");
    expect((await waitsWhileHung<{ id: number }>("SELECT public.add_row(7) AS id")).value?.rows).toEqual([{ id: 7 }]);
    await db!.query("DELETE FROM t WHERE id = 7");
  });

  it("gives up on a transaction's statements before COMMIT, and the server rolls the transaction back", async () => {
    const tx = await whileHung(async () => {
      const began = Date.now();
      const r = await settled(db!.tx((q) => q.query("INSERT INTO t (id) VALUES (2)")));
      return { ...r, ms: Date.now() - began };
    });
    expect(tx.error).toBeInstanceOf(DatabaseUnavailableError);
    expect(tx.ms).toBeLessThan(3_000);
    // the server got BEGIN (or BEGIN and the INSERT) and then lost the connection: nothing committed
    await sleep(200);
    expect((await db!.query("SELECT id FROM t ORDER BY id")).rows).toEqual([{ id: 1 }]);
  });

  it("/health's ping says false within its limit while the server hangs, true once it answers", async () => {
    const ping = await whileHung(async () => {
      const began = Date.now();
      return { up: await db!.ping(500), ms: Date.now() - began };
    });
    expect(ping.up).toBe(false);
    expect(ping.ms).toBeLessThan(1_500);
    expect(await db!.ping()).toBe(true);
  });
});
