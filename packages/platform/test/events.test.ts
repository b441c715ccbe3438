// The EventLog contract, run against every transport: the postgres transport always, the kafka
// transport when KAFKA_BROKERS points at a broker (e.g. KAFKA_BROKERS=127.0.0.1:9092).
// Sources and consumers use the real service migrations: the verification schema publishes,
// the webhook schema consumes.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import {
  appendEvents,
  createEventLog,
  createLogger,
  openDatabase,
  openServiceDatabase,
  parseConfig,
  sqlStatementCounts,
  startOutboxRelay,
  type Config,
  type Database,
  type EventLog,
  type EventRecord,
  type OutboxEvent,
  type OutboxRelay,
  type Queryable,
} from "../src/index.ts";
import { maybeFreshPostgres, type FreshPostgres } from "../../../test/support/fresh-postgres.ts";
import { waitFor } from "../../../test/support/expect-error.ts";

const root = path.resolve(import.meta.dirname, "../../..");
const MIGRATIONS = (svc: string) => path.join(root, "services", svc, "migrations");
const logger = createLogger({ level: "silent" });
const KAFKA = process.env.KAFKA_BROKERS;

interface Rig {
  config: Config;
  source: Database;
  sink: Database;
  relays: OutboxRelay[];
  logs: EventLog[];
  fresh?: FreshPostgres;
  dataDir: string;
}
let rig: Rig | undefined;

async function setup(transport: "postgres" | "kafka"): Promise<Rig> {
  const dataDir = mkdtempSync(path.join(tmpdir(), "icv-events-"));
  const fresh = await maybeFreshPostgres();
  const config = parseConfig({
    DATA_DIR: dataDir,
    DATABASE_URL: fresh?.url,
    // a minute: every delivery within the tests' second comes through LISTEN/NOTIFY
    EVENT_POLL_INTERVAL_MS: "60000",
    ...(transport === "kafka" ? { KAFKA_BROKERS: KAFKA, KAFKA_TOPIC_PREFIX: `icv-test-${randomBytes(4).toString("hex")}.` } : {}),
  });
  const source = await openServiceDatabase(config, "verification", MIGRATIONS("verification"), logger, { outbox: true });
  const sink = await openServiceDatabase(config, "webhook", MIGRATIONS("webhook"), logger);
  // no unique constraint: an event applied twice shows up as two rows
  await sink.exec(`CREATE TABLE webhook.effects (n serial PRIMARY KEY, event_id text NOT NULL, aggregate_id text NOT NULL, k int NOT NULL)`);
  rig = { config, source, sink, relays: [], logs: [], fresh, dataDir };
  return rig;
}

afterEach(async () => {
  if (!rig) return;
  const r = rig;
  rig = undefined;
  for (const l of r.logs) await l.close();
  for (const x of r.relays) await x.stop();
  await r.source.close();
  await r.sink.close();
  await r.fresh?.drop();
  rmSync(r.dataDir, { recursive: true, force: true });
});

const relay = async (r: Rig, extra: Partial<Parameters<typeof startOutboxRelay>[0]> = {}) => {
  const x = await startOutboxRelay({ config: r.config, db: r.source, schema: "verification", logger, ...extra });
  r.relays.push(x);
  return x;
};
const eventLog = async (r: Rig) => {
  const l = await createEventLog(r.config, logger);
  r.logs.push(l);
  return l;
};

/** `count` events spread over `aggregates` verifications, k = 0… in each aggregate's order, written in several statements. */
async function publish(r: Rig, count: number, aggregates = 5, from = 0): Promise<void> {
  const events: OutboxEvent[] = [];
  for (let i = from; i < from + count; i++) {
    events.push({
      aggregateType: "verification",
      aggregateId: `ver_agg${i % aggregates}`,
      eventType: "verification.status_changed",
      tenantId: "ten_test",
      environment: i % 2 ? "live" : "test",
      payload: { k: Math.floor(i / aggregates) },
    });
  }
  for (let i = 0; i < events.length; i += 7) await appendEvents(r.source, "verification", events.slice(i, i + 7));
}

const handle = async (q: Queryable, e: EventRecord) => {
  await q.query(`INSERT INTO webhook.effects (event_id, aggregate_id, k) VALUES ($1, $2, $3)`, [e.id, e.aggregateId, e.payload.k]);
};

const effects = async (r: Rig) =>
  (await r.sink.query<{ event_id: string; aggregate_id: string; k: number }>(`SELECT event_id, aggregate_id, k FROM webhook.effects ORDER BY n`)).rows;

async function expectExactlyOnce(r: Rig, total: number, aggregates = 5) {
  await waitFor(async () => (await effects(r)).length >= total, 10_000);
  await new Promise((res) => setTimeout(res, 200)); // a duplicate would land now
  const rows = await effects(r);
  expect(rows.length).toBe(total);
  expect(new Set(rows.map((x) => x.event_id)).size).toBe(total);
  for (let a = 0; a < aggregates; a++) {
    const ks = rows.filter((x) => x.aggregate_id === `ver_agg${a}`).map((x) => x.k);
    expect(ks).toEqual([...ks].sort((x, y) => x - y));
  }
}

const TRANSPORTS = [
  { name: "postgres" as const, skip: false },
  { name: "kafka" as const, skip: !KAFKA },
];

for (const t of TRANSPORTS) {
  describe.skipIf(t.skip)(`EventLog over ${t.name}${t.skip ? " (skipped: set KAFKA_BROKERS=host:port to run against a broker)" : ""}`, () => {
    it("a consumer group applies every event once, each aggregate's events in order", async () => {
      const r = await setup(t.name);
      await relay(r);
      const log = await eventLog(r);
      await publish(r, 60);
      await log.consume({ group: "g1", topics: ["verification"], db: r.sink, schema: "webhook", handle });
      await publish(r, 140, 5, 60);
      await expectExactlyOnce(r, 200);
    });

    it("two members of one group share the events and never apply one twice", async () => {
      const r = await setup(t.name);
      await relay(r);
      const [a, b] = [await eventLog(r), await eventLog(r)];
      await a.consume({ group: "shared", topics: ["verification"], db: r.sink, schema: "webhook", handle });
      await b.consume({ group: "shared", topics: ["verification"], db: r.sink, schema: "webhook", handle });
      await publish(r, 300, 10);
      await expectExactlyOnce(r, 300, 10);
    });

    it("a consumer killed between handling and acknowledging loses nothing and applies nothing twice", async () => {
      const r = await setup(t.name);
      await relay(r);
      await publish(r, 50);
      const doomed = await eventLog(r);
      let killed = 0;
      await doomed.consume({
        group: "crashy",
        topics: ["verification"],
        db: r.sink,
        schema: "webhook",
        handle,
        beforeAck(handled) {
          if (!handled.length || killed) return;
          killed = handled.length;
          void doomed.close(); // the process dies here: nothing after this point runs
          throw new Error("killed");
        },
      });
      await waitFor(async () => killed > 0, 10_000);
      expect(killed).toBeGreaterThan(0);
      const survivor = await eventLog(r);
      await survivor.consume({ group: "crashy", topics: ["verification"], db: r.sink, schema: "webhook", handle });
      await publish(r, 30, 5, 50);
      await expectExactlyOnce(r, 80);
    });

    it("a relay killed after publishing but before marking publishes again, and consumers skip the repeats", async () => {
      const r = await setup(t.name);
      let kills = 0;
      // the postgres relay stamps and marks in one statement, so only the kafka publisher has this window
      await relay(r, {
        afterPublish() {
          if (kills++ === 0) throw new Error("killed");
        },
      });
      const log = await eventLog(r);
      await log.consume({ group: "g2", topics: ["verification"], db: r.sink, schema: "webhook", handle });
      await publish(r, 40);
      await expectExactlyOnce(r, 40);
      if (t.name === "kafka") expect(kills).toBeGreaterThan(1);
    });

    it("broadcast gives every subscriber each event published after it subscribed, once and at once", async () => {
      const r = await setup(t.name);
      await relay(r);
      await publish(r, 20);
      await waitFor(async () => (await r.source.query(`SELECT 1 FROM verification.outbox WHERE published_at IS NULL`)).rowCount === 0, 5000);
      const seen: EventRecord[][] = [[], []];
      for (const s of seen) await (await eventLog(r)).broadcast({ topics: ["verification"], onEvent: (e) => s.push(e) });
      const sent = Date.now();
      await publish(r, 1, 1, 1000);
      await waitFor(async () => seen.every((s) => s.length >= 1), 2000, 5);
      expect(Date.now() - sent).toBeLessThan(1000);
      await publish(r, 29, 5, 1001);
      await waitFor(async () => seen.every((s) => s.length >= 30), 10_000);
      await new Promise((res) => setTimeout(res, 200));
      for (const s of seen) {
        expect(s.length).toBe(30);
        expect(new Set(s.map((e) => e.id)).size).toBe(30);
        expect(s.every((e) => e.eventType === "verification.status_changed" && e.tenantId === "ten_test" && e.createdAt instanceof Date)).toBe(true);
      }
    });

    it.skipIf(t.name !== "postgres")("the followers of a source in one process share its reads: one query per NOTIFY, not one per follower", async () => {
      const r = await setup(t.name);
      await relay(r);
      const seen: EventRecord[][] = [[], [], []];
      // three logs (as the services of `npm start` each open one), each broadcasting, one also consuming
      for (const s of seen) await (await eventLog(r)).broadcast({ topics: ["verification"], onEvent: (e) => s.push(e) });
      await r.logs[0].consume({ group: "shared-reads", topics: ["verification"], db: r.sink, schema: "webhook", handle });
      await publish(r, 1, 1);
      await waitFor(async () => seen.every((s) => s.length === 1) && (await effects(r)).length === 1, 5000);
      await new Promise((res) => setTimeout(res, 100));
      const reads = () => sqlStatementCounts.get("events") ?? 0;
      const before = reads();
      await publish(r, 1, 1, 1);
      await waitFor(async () => seen.every((s) => s.length === 2) && (await effects(r)).length === 2, 5000);
      await new Promise((res) => setTimeout(res, 100));
      // four followers were woken; one SELECT of the outbox answered them all
      expect(reads() - before).toBe(1);
    });

    it.skipIf(t.name !== "postgres")(
      "a follower behind takes the rows another already read, then reads on: every event once, in order, without waiting for a poll",
      async () => {
        const r = await setup(t.name);
        await relay(r);
        const seen: EventRecord[] = [];
        await (await eventLog(r)).broadcast({ topics: ["verification"], onEvent: (e) => seen.push(e) });
        // a consumer that falls behind the broadcast: its first batches take a while
        let slowFor = 2;
        await r.logs[0].consume({
          group: "behind",
          topics: ["verification"],
          db: r.sink,
          schema: "webhook",
          handle: async (q, e) => {
            if (slowFor-- > 0) await new Promise((res) => setTimeout(res, 300));
            await handle(q, e);
          },
        });
        const sent = Date.now();
        await publish(r, 1, 1);
        await waitFor(async () => seen.length === 1, 2000, 5);
        for (let i = 0; i < 4; i++) {
          await publish(r, 5, 5, 1 + 5 * i);
          await new Promise((res) => setTimeout(res, 50));
        }
        await waitFor(async () => seen.length === 21, 2000, 5);
        // the poll is a minute away: the consumer caught up from the broadcast's reads and NOTIFYs alone
        await expectExactlyOnce(r, 21);
        expect(Date.now() - sent).toBeLessThan(5_000);
        expect(new Set(seen.map((e) => e.id)).size).toBe(21);
      },
    );

    it.skipIf(t.name !== "postgres")(
      "a follower behind, taking rows from a full batch another read, reads on at once: a backlog of 1,200 without waiting for a poll",
      async () => {
        const r = await setup(t.name);
        await relay(r);
        const seenB: string[] = [];
        const groupB = {
          group: "b",
          topics: ["verification"],
          db: r.sink,
          schema: "webhook",
          handle: async (_q: Queryable, e: EventRecord) => void seenB.push(e.id),
        };
        // B has read the first 100 events, then stops
        const first = await eventLog(r);
        await first.consume(groupB);
        await publish(r, 100, 5);
        await waitFor(async () => seenB.length === 100, 5000);
        await first.close();
        await publish(r, 1_100, 5, 100);
        await waitFor(async () => (await r.source.query(`SELECT 1 FROM verification.outbox WHERE published_at IS NULL`)).rowCount === 0, 5000);
        // A reads the backlog from its start, 500 rows at a time, and holds its first batch a while
        let slowA = true;
        await (await eventLog(r)).consume({
          group: "a",
          topics: ["verification"],
          db: r.sink,
          schema: "webhook",
          handle: async () => {
            if (slowA) await new Promise((res) => setTimeout(res, 1_000));
            slowA = false;
          },
        });
        await new Promise((res) => setTimeout(res, 100));
        // B starts again inside A's first batch: its rows after 100 come from A's read, the rest from the outbox
        const started = Date.now();
        await (await eventLog(r)).consume(groupB);
        await waitFor(async () => seenB.length === 1_200, 5_000, 5);
        expect(Date.now() - started).toBeLessThan(5_000);
        expect(new Set(seenB).size).toBe(1_200);
      },
    );

    it("a consumer of some event types gets only those, records only theirs, and passes over batches of others without a transaction", async () => {
      const r = await setup(t.name);
      await relay(r);
      const completed = (n: number, from: number): OutboxEvent[] =>
        Array.from({ length: n }, (_, i) => ({
          aggregateType: "verification",
          aggregateId: "ver_agg0",
          eventType: "verification.completed",
          tenantId: "ten_test",
          environment: "test" as const,
          payload: { k: from + i },
        }));
      const typed = { group: "typed", topics: ["verification"], eventTypes: ["verification.completed"], db: r.sink, schema: "webhook", handle };
      const first = await eventLog(r);
      await first.consume(typed);
      await publish(r, 30);
      await appendEvents(r.source, "verification", completed(2, 0));
      await publish(r, 10, 5, 30);
      await appendEvents(r.source, "verification", completed(1, 2));
      await expectExactlyOnce(r, 3, 1);
      expect((await effects(r)).map((e) => e.k)).toEqual([0, 1, 2]);
      if (t.name === "postgres") {
        const consumed = await r.sink.query(`SELECT 1 FROM webhook.event_consumed WHERE consumer = 'typed'`);
        expect(consumed.rowCount).toBe(3);
        const cursor = async () =>
          (await r.sink.query<{ p: number }>(`SELECT position::float8 AS p FROM webhook.event_cursors WHERE consumer = 'typed'`)).rows[0].p;
        const maxSeq = async () => (await r.source.query<{ m: number }>(`SELECT max(seq)::float8 AS m FROM verification.outbox`)).rows[0].m;
        const at = await cursor();
        expect(at).toBe(await maxSeq());
        // a batch of other types: read, passed over, the cursor row untouched
        const reads = () => sqlStatementCounts.get("events") ?? 0;
        const before = reads();
        await publish(r, 20, 5, 40);
        await waitFor(async () => reads() > before, 5000);
        await new Promise((res) => setTimeout(res, 200));
        expect(await cursor()).toBe(at);
        // the next wanted event moves it past both
        await appendEvents(r.source, "verification", completed(1, 3));
        await expectExactlyOnce(r, 4, 1);
        await waitFor(async () => (await cursor()) === (await maxSeq()), 5000);
      } else {
        await appendEvents(r.source, "verification", completed(1, 3));
        await expectExactlyOnce(r, 4, 1);
      }
      // a restart reads again what was passed over since, applies nothing twice and misses nothing
      await first.close();
      await publish(r, 15, 5, 60);
      const second = await eventLog(r);
      await second.consume(typed);
      await appendEvents(r.source, "verification", completed(1, 4));
      await expectExactlyOnce(r, 5, 1);
      expect((await effects(r)).map((e) => e.k)).toEqual([0, 1, 2, 3, 4]);
    });

    it("a consumer that names its relevant events records and handles only those, and asks again after a restart", async () => {
      const r = await setup(t.name);
      await relay(r);
      const asked = new Set<string>();
      // relevance by a read outside the transaction, as the webhook consumer asks for endpoints: two aggregates of five
      const relevant = async (events: EventRecord[]) => {
        for (const e of events) asked.add(e.id);
        return events.filter((e) => e.aggregateId === "ver_agg0" || e.aggregateId === "ver_agg2");
      };
      const group = { group: "relevant", topics: ["verification"], db: r.sink, schema: "webhook", handle, relevant };
      const first = await eventLog(r);
      await first.consume(group);
      await publish(r, 30);
      await expectExactlyOnce(r, 12);
      expect(new Set((await effects(r)).map((e) => e.aggregate_id))).toEqual(new Set(["ver_agg0", "ver_agg2"]));
      expect(asked.size).toBe(30);
      if (t.name === "postgres") {
        const consumed = await r.sink.query(`SELECT 1 FROM webhook.event_consumed WHERE consumer = 'relevant'`);
        expect(consumed.rowCount).toBe(12);
      }
      await first.close();
      await publish(r, 15, 5, 30);
      const second = await eventLog(r);
      await second.consume(group);
      await expectExactlyOnce(r, 18);
      expect(
        (await effects(r))
          .filter((e) => e.k >= 6)
          .map((e) => e.aggregate_id)
          .sort(),
      ).toEqual([...Array(3).fill("ver_agg0"), ...Array(3).fill("ver_agg2")]);
    });

    it("a consumer reads only its topics and still moves past the others", async () => {
      const r = await setup(t.name);
      await relay(r);
      const log = await eventLog(r);
      await log.consume({ group: "requests-only", topics: ["verification_request"], db: r.sink, schema: "webhook", handle });
      await publish(r, 30); // verification events: not for this consumer
      await appendEvents(r.source, "verification", [
        {
          aggregateType: "verification_request",
          aggregateId: "ver_agg0",
          eventType: "verification_request.completed",
          tenantId: "ten_test",
          environment: "test",
          payload: { k: 0 },
        },
      ]);
      await expectExactlyOnce(r, 1, 1);
      expect((await effects(r))[0].k).toBe(0);
    });
  });
}

describe("the postgres transport's relay", () => {
  it("run by two replicas at once, stamps every row once: seq 1…N with no gap, each aggregate's events in order", async () => {
    const r = await setup("postgres");
    // the second replica has its own pool (on the embedded database both share the one connection)
    const other = r.fresh ? await openDatabase({ url: r.fresh.url, poolMax: 4 }) : r.source;
    try {
      await relay(r);
      await relay(r, { db: other });
      // written while both relays run, from several connections at once
      await Promise.all(Array.from({ length: 6 }, (_, w) => publish(r, 50, 5, w * 50)));
      await waitFor(async () => (await r.source.query(`SELECT 1 FROM verification.outbox WHERE published_at IS NULL`)).rowCount === 0, 10_000);
      const rows = (
        await r.source.query<{ seq: number; aggregate_id: string; k: number }>(
          `SELECT seq::float8 AS seq, aggregate_id, (payload->>'k')::int AS k FROM verification.outbox ORDER BY seq`,
        )
      ).rows;
      expect(rows.map((x) => x.seq)).toEqual(Array.from({ length: 300 }, (_, i) => i + 1));
      for (let a = 0; a < 5; a++) {
        const ks = rows.filter((x) => x.aggregate_id === `ver_agg${a}`).map((x) => x.k);
        expect(ks).toHaveLength(60);
        // one writer's events of an aggregate keep their order (writers ran side by side)
        for (let w = 0; w < 6; w++) {
          const mine = ks.filter((k) => Math.floor(k / 10) === w);
          expect(mine).toEqual(Array.from({ length: 10 }, (_, i) => w * 10 + i));
        }
      }
    } finally {
      if (other !== r.source) await other.close();
    }
  });
});

describe("the postgres transport's relay on a schema without the outbox migrations", () => {
  it("refuses to start, naming what is missing, instead of failing every run", async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), "icv-events-"));
    const fresh = await maybeFreshPostgres();
    const config = parseConfig({ DATA_DIR: dataDir, DATABASE_URL: fresh?.url });
    const db = await openServiceDatabase(config, "verification", MIGRATIONS("verification"), logger);
    try {
      await expect(startOutboxRelay({ config, db, schema: "verification", logger })).rejects.toThrow(
        "verification.outbox_stamp is missing: open the verification database with its outbox migrations",
      );
    } finally {
      await db.close();
      await fresh?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
