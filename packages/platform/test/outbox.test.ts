import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase, type Database } from "../src/database.ts";
import { isId } from "../src/ids.ts";
import { appendEvent, appendEvents, type OutboxEvent } from "../src/outbox.ts";
import { maybeFreshPostgres, type FreshPostgres } from "../../../test/support/fresh-postgres.ts";

// the same columns every service migration gives its outbox
const SCHEMA = `
CREATE SCHEMA box;
CREATE TABLE box.things (id text PRIMARY KEY, state text NOT NULL);
CREATE TABLE box.outbox (
  id text PRIMARY KEY, aggregate_type text NOT NULL, aggregate_id text NOT NULL, event_type text NOT NULL,
  tenant_id text NOT NULL, environment text NOT NULL CHECK (environment IN ('live', 'test')),
  payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now(), published_at timestamptz);
`;

interface EventRow {
  id: string;
  aggregate_type: string;
  aggregate_id: string;
  event_type: string;
  tenant_id: string;
  environment: string;
  payload: Record<string, unknown>;
  created_at: Date;
  published_at: Date | null;
}

let pgFresh: FreshPostgres | undefined;
let db: Database;
beforeAll(async () => {
  pgFresh = await maybeFreshPostgres();
  db = await openDatabase(pgFresh ? { url: pgFresh.url, poolMax: 2 } : { dataDir: "memory://" });
  await db.exec(SCHEMA);
});
afterAll(async () => {
  await db?.close();
  await pgFresh?.drop();
});

const ev = (aggregateId: string, eventType = "thing.changed", payload: Record<string, unknown> = { n: 1 }): OutboxEvent => ({
  aggregateType: "thing",
  aggregateId,
  eventType,
  tenantId: "ten_1",
  environment: "test",
  payload,
});
const thing = async (id: string) => (await db.query("SELECT state FROM box.things WHERE id = $1", [id])).rows[0];
const eventsOf = async (id: string) => (await db.query<EventRow>("SELECT * FROM box.outbox WHERE aggregate_id = $1 ORDER BY id", [id])).rows;

describe(`outbox (${process.env.DATABASE_URL ? "Postgres" : "PGlite"})`, () => {
  it("a transaction that throws after appending leaves neither the state change nor the event", async () => {
    await expect(
      db.tx(async (q) => {
        await q.query("INSERT INTO box.things (id, state) VALUES ($1, 'new')", ["t-rollback"]);
        await appendEvent(q, "box", ev("t-rollback"));
        throw new Error("crash before commit");
      }),
    ).rejects.toThrow("crash before commit");
    expect(await thing("t-rollback")).toBeUndefined();
    expect(await eventsOf("t-rollback")).toEqual([]);
  });

  it("a committed transaction leaves both, the event exactly as appended", async () => {
    const at = new Date("2026-02-04T10:00:00.123Z");
    const id = await db.tx(async (q) => {
      await q.query("INSERT INTO box.things (id, state) VALUES ($1, 'new')", ["t-commit"]);
      return appendEvent(q, "box", ev("t-commit", "thing.created", { state: "new", nested: { ok: true }, list: [1, "two"] }), at);
    });
    expect(isId("event", id)).toBe(true);
    expect(await thing("t-commit")).toEqual({ state: "new" });
    const rows = await eventsOf("t-commit");
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      id,
      aggregate_type: "thing",
      aggregate_id: "t-commit",
      event_type: "thing.created",
      tenant_id: "ten_1",
      environment: "test",
      payload: { state: "new", nested: { ok: true }, list: [1, "two"] },
      published_at: null,
    });
    expect(new Date(rows[0].created_at).toISOString()).toBe(at.toISOString());
  });

  it("appendEvents writes a batch in one statement, each with its own id, and rolls back with its transaction", async () => {
    const at = new Date("2026-02-04T11:00:00.000Z");
    await db.tx(async (q) => {
      await appendEvents(q, "box", [ev("t-batch", "a", { i: 0 }), ev("t-batch", "b", { i: 1 }), ev("t-batch", "c", { i: 2 })], at);
    });
    const rows = await eventsOf("t-batch");
    expect(rows.map((r) => [r.event_type, r.payload])).toEqual([
      ["a", { i: 0 }],
      ["b", { i: 1 }],
      ["c", { i: 2 }],
    ]);
    expect(new Set(rows.map((r) => r.id)).size).toBe(3);
    expect(rows.every((r) => isId("event", r.id) && new Date(r.created_at).getTime() === at.getTime())).toBe(true);

    await expect(
      db.tx(async (q) => {
        await appendEvents(q, "box", [ev("t-batch-rb"), ev("t-batch-rb")]);
        throw new Error("crash");
      }),
    ).rejects.toThrow("crash");
    expect(await eventsOf("t-batch-rb")).toEqual([]);
  });

  it("appendEvents of nothing writes nothing", async () => {
    const before = (await db.query<{ n: number }>("SELECT count(*)::int AS n FROM box.outbox")).rows[0].n;
    await db.tx((q) => appendEvents(q, "box", []));
    expect((await db.query<{ n: number }>("SELECT count(*)::int AS n FROM box.outbox")).rows[0].n).toBe(before);
  });
});
