// The process's LISTEN session (listen.ts): every Database on the same database shares one
// listening backend, whatever the channels (Postgres wakes each listening backend of a database on
// every NOTIFY), each listener still gets only its channel, and the session survives the loss of
// its backend. PGlite listens in its own process: Postgres only.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase, type Database } from "../src/database.ts";
import { freshPostgres, type FreshPostgres } from "../../../test/support/fresh-postgres.ts";

const url = process.env.DATABASE_URL;
let fresh: FreshPostgres;
let dbs: Database[] = [];

beforeAll(async () => {
  if (!url) return;
  fresh = await freshPostgres(url);
  dbs = await Promise.all([1, 2, 3].map(() => openDatabase({ url: fresh.url, poolMax: 2 })));
});
afterAll(async () => {
  for (const db of dbs) await db.close();
  await fresh?.drop();
});

const listening = async (db: Database) =>
  (
    await db.query<{ pid: number; query: string }>(
      "SELECT pid, query FROM pg_stat_activity WHERE datname = current_database() AND query LIKE '%LISTEN%' AND pid <> pg_backend_pid()",
    )
  ).rows;

const until = async (ok: () => boolean | Promise<boolean>, ms = 5_000) => {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 20));
  }
};

describe.skipIf(!url)("one LISTEN session per process and database", () => {
  it("serves every channel of every Database with one backend, each listener its own channel only", async () => {
    const got: string[] = [];
    const [a, b, c] = dbs;
    const off = [
      await a.listen("icv_outbox", (p) => got.push(`a:outbox:${p}`)),
      await b.listen("icv_outbox", (p) => got.push(`b:outbox:${p}`)),
      await c.listen("icv_events", (p) => got.push(`c:events:${p}`)),
    ];
    expect(await listening(a)).toHaveLength(1);

    await a.query("SELECT pg_notify('icv_outbox', 'verification'), pg_notify('icv_events', 'proof'), pg_notify('other', 'x')");
    await until(() => got.length >= 3);
    expect(got.sort()).toEqual(["a:outbox:verification", "b:outbox:verification", "c:events:proof"]);

    // one listener leaves: the others keep hearing, on the same backend
    await off[0]();
    got.length = 0;
    await a.query("SELECT pg_notify('icv_outbox', 'proof')");
    await until(() => got.length >= 1);
    await new Promise((r) => setTimeout(r, 100));
    expect(got).toEqual(["b:outbox:proof"]);
    expect(await listening(a)).toHaveLength(1);

    // the last one leaves: no listening backend is left
    await off[1]();
    await off[2]();
    await until(async () => (await listening(a)).length === 0);
  });

  it("listens again after its backend is lost, and closes it when the last listener leaves", async () => {
    const got: string[] = [];
    const [a, b] = dbs;
    const offA = await a.listen("icv_outbox", (p) => got.push(`outbox:${p}`));
    const offB = await b.listen("icv_events", (p) => got.push(`events:${p}`));
    const [first] = await listening(a);
    await a.query("SELECT pg_terminate_backend($1)", [first.pid]);
    // reconnected within a few seconds, both channels again
    await until(async () => {
      const now = await listening(a);
      return now.length === 1 && now[0].pid !== first.pid && /icv_events/.test(now[0].query);
    }, 8_000);
    await a.query("SELECT pg_notify('icv_outbox', 'one'), pg_notify('icv_events', 'two')");
    await until(() => got.length >= 2);
    expect(got.sort()).toEqual(["events:two", "outbox:one"]);
    await offA();
    await offB();
    await until(async () => (await listening(a)).length === 0);
  });
});
