// The sequencer as an operator relies on it: two replicas never sequence at once (the lease), an
// event delivered again is never logged twice, a restarted sequencer goes on from the stored
// checkpoint, and every checkpoint is signed by the log key over the root of what is stored.
import { createHash, createPublicKey, verify } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger, ManualClock, migrate, newId, openDatabase, readMigrations, type Database, type EventRecord, type Queryable } from "@icv/platform";
import { maybeFreshPostgres, type FreshPostgres } from "../../../test/support/fresh-postgres.ts";
import { logConsumer } from "../src/consumer.ts";
import { ensureLogKey, type LogKey } from "../src/log-key.ts";
import { Sequencer } from "../src/sequencer.ts";
import { LogStore, type LogEnv } from "../src/store/log.ts";

const MIGRATIONS = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "migrations");
const clock = new ManualClock(new Date("2026-03-01T12:00:00.000Z"));
const logger = createLogger({ level: "silent" });
let pg: FreshPostgres | undefined;
let db: Database;
let store: LogStore;
const keys = new Map<LogEnv, LogKey>();

beforeAll(async () => {
  pg = await maybeFreshPostgres();
  db = await openDatabase({ url: pg?.url, dataDir: "memory://" });
  await migrate(db, "log", readMigrations(MIGRATIONS));
  store = new LogStore(db);
  const kek = Buffer.alloc(32, 9);
  for (const env of ["live", "test"] as const) keys.set(env, await ensureLogKey(store, env, `icv.test/log${env === "test" ? "/test" : ""}`, kek, logger));
  first = sequencer();
});
afterAll(async () => {
  await db?.close();
  await pg?.drop();
});

const sequencer = () => new Sequencer({ store, keys, clock, logger, leaseMs: 60_000 });
/** The first replica: it holds the lease until the last test stops it. */
let first: Sequencer;

const issued = (proofId: string, env: LogEnv = "live"): EventRecord => ({
  id: newId("event"),
  aggregateType: "proof",
  aggregateId: proofId,
  eventType: "proof.issued",
  tenantId: "ten_01J00000000000000000000001",
  environment: env,
  payload: { proof_id: proofId, token_sha256: "ab".repeat(32), env, type: "domain", channel: "dns", method: "dns_txt", subject: "acme.example" },
  createdAt: clock.now(),
});

async function consume(events: EventRecord[]): Promise<void> {
  const c = logConsumer(() => {});
  await db.tx((q) => c.handleBatch(q, events));
}

const entryCount = async (proofId: string) =>
  (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM log.entries WHERE proof_id = $1`, [proofId])).rows[0].n;

function rootOf(entries: Buffer[]): Buffer {
  const hash = (...p: Buffer[]) => createHash("sha256").update(Buffer.concat(p)).digest();
  const mth = (d: Buffer[]): Buffer => {
    if (d.length === 0) return hash();
    if (d.length === 1) return hash(Buffer.from([0]), d[0]);
    let k = 1;
    while (k * 2 < d.length) k *= 2;
    return hash(Buffer.from([1]), mth(d.slice(0, k)), mth(d.slice(k)));
  };
  return mth(entries);
}

describe("the sequencer", () => {
  it("signs an empty checkpoint first, then one per batch over the root of the stored entries", async () => {
    const s = first;
    await s.init();
    expect((await store.checkpoint("live"))?.size).toBe(0);
    await consume([issued("ver_01J00000000000000000000A01"), issued("ver_01J00000000000000000000A02"), issued("ver_01J00000000000000000000T01", "test")]);
    expect(await s.once()).toEqual({ logged: 3, more: false });
    const cp = (await store.checkpoint("live"))!;
    const [body, sigLine] = cp.note.split("\n\n");
    const [origin, size, root] = body.split("\n");
    expect([origin, size]).toEqual(["icv.test/log", "2"]);
    expect(Buffer.from(root, "base64").equals(rootOf(await store.entries("live", 0, 2)))).toBe(true);
    const k = keys.get("live")!;
    const sig = Buffer.from(sigLine.split(" ")[2], "base64");
    expect(verify(null, Buffer.from(`${body}\n`), createPublicKey(k.privateKey), sig.subarray(4))).toBe(true);
    expect((await store.checkpoint("test"))?.size).toBe(1);
  });

  it("logs an event delivered again once", async () => {
    const e = issued("ver_01J00000000000000000000A03");
    await consume([e]);
    await first.once();
    await consume([e]); // a redelivery after it was logged (its consumed id forgotten)
    await consume([e, e]);
    expect((await first.once()).logged).toBe(0);
    expect(await entryCount("ver_01J00000000000000000000A03")).toBe(1);
  });

  it("takes a batch oldest first across digit boundaries (queue numbers 9 and 10, 99 and 100) and leaves nothing behind", async () => {
    const ids = Array.from({ length: 120 }, (_, i) => `ver_01J0000000000000000000B${String(i).padStart(3, "0")}`);
    await consume(ids.map((id) => issued(id)));
    expect(await first.once()).toEqual({ logged: 120, more: false });
    expect(await store.pendingCount()).toBe(0);
    expect(await first.once()).toEqual({ logged: 0, more: false });
    for (const id of [ids[0], ids[9], ids[99], ids[119]]) expect(await entryCount(id)).toBe(1);
  });

  it("lets one replica sequence while it holds the lease; another goes on from the stored tree once it is released", async () => {
    const other = sequencer();
    await consume([issued("ver_01J00000000000000000000A04")]);
    const [ra, rb] = await Promise.all([first.once(), other.once()]);
    expect([ra.logged, rb.logged]).toEqual([1, 0]);
    const holder = first;
    await consume([issued("ver_01J00000000000000000000A05")]);
    expect((await other.once()).logged).toBe(0); // the lease is the first one's
    await holder.stop(); // releases it
    expect((await other.once()).logged).toBe(1);
    const cp = (await store.checkpoint("live"))!;
    expect(Buffer.from(cp.root).equals(rootOf(await store.entries("live", 0, cp.size)))).toBe(true);
    expect(await store.pendingCount()).toBe(0);
  });

  /** The plan of every statement fn sends through the Queryable it is given, over the rows `setup` adds in a transaction rolled back (the tree above stays as it is). */
  async function plans(setup: string[], fn: (q: Queryable) => Promise<unknown>): Promise<string> {
    const ROLLBACK = new Error("roll back");
    let plan = "";
    await db
      .tx(async (q) => {
        for (const sql of setup) await q.query(sql);
        await fn({
          query: async <T>(sql: string, params?: unknown[]) => {
            const r = await q.query<Record<string, string>>(`EXPLAIN ${sql}`, params);
            plan += r.rows.map((x) => Object.values(x)[0]).join("\n");
            return { rows: [] as T[], rowCount: 0 };
          },
          exec: q.exec,
        });
        throw ROLLBACK;
      })
      .catch((e) => {
        if (e !== ROLLBACK) throw e;
      });
    return plan;
  }

  it("queues a batch by looking its ids up in the log, not by reading the whole log", async () => {
    const batch = Array.from({ length: 200 }, (_, i) => issued(`ver_01J0000000000000000000C${String(i).padStart(3, "0")}`));
    const plan = await plans(
      [
        `INSERT INTO log.entries (environment, leaf_index, event_id, proof_id, kind, entry)
         SELECT 'live', 1000000 + g, 'evt_bulk' || g, 'ver_bulk' || g, 'issued', '\\x00' FROM generate_series(1, 20000) g`,
        "ANALYZE log.entries",
      ],
      (q) =>
        LogStore.queue(
          q,
          batch.map((e) => ({ eventId: e.id, env: "live" as const, fields: { proof_id: e.aggregateId } })),
        ),
    );
    expect(plan).toMatch(/entries_event_id_key/);
    expect(plan).not.toMatch(/Seq Scan on entries/);
  });

  it("asks whether anything waits through the queue's key, not by scanning past the rows it sequenced", async () => {
    // 20,000 events queued and sequenced (deleted), not yet vacuumed: a scan from the first page reads all of them
    const plan = await plans(
      [
        `INSERT INTO log.pending (event_id, environment, fields) SELECT 'evt_gone' || g, 'live', '{}' FROM generate_series(1, 20000) g`,
        "ANALYZE log.pending",
        "DELETE FROM log.pending WHERE event_id LIKE 'evt_gone%'",
      ],
      (q) => new LogStore(Object.assign(Object.create(db) as Database, { query: q.query })).anyPending(),
    );
    expect(plan).toMatch(/Index (Only )?Scan using pending_pkey/);
    expect(plan).not.toMatch(/Seq Scan on pending/);
  });
});
