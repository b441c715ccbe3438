// The kafka transport's relay while the broker is away: a publish that hangs (kafkajs waits out
// an absent broker for seconds, then fails) holds up no other statement of the service, its rows
// stay unpublished and grow in number, and once the broker answers they go out once each and are
// marked published. On the embedded database too, whose transaction holds every statement of
// the process (the relay sends outside one there).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  appendEvents,
  createLogger,
  openServiceDatabase,
  parseConfig,
  startOutboxRelay,
  type Database,
  type EventRecord,
  type OutboxRelay,
} from "../src/index.ts";
import { maybeFreshPostgres, type FreshPostgres } from "../../../test/support/fresh-postgres.ts";
import { waitFor } from "../../../test/support/expect-error.ts";

const root = path.resolve(import.meta.dirname, "../../..");
const logger = createLogger({ level: "silent" });
const dataDir = mkdtempSync(path.join(tmpdir(), "icv-relay-away-"));
let fresh: FreshPostgres | undefined;
let db: Database;
let relay: OutboxRelay | undefined;

beforeAll(async () => {
  fresh = await maybeFreshPostgres();
  const config = parseConfig({ DATA_DIR: dataDir, DATABASE_URL: fresh?.url, EVENT_POLL_INTERVAL_MS: "50" });
  db = await openServiceDatabase(config, "verification", path.join(root, "services", "verification", "migrations"), logger);
});
afterAll(async () => {
  await relay?.stop();
  await db?.close();
  await fresh?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

const event = (i: number) => ({
  aggregateType: "verification",
  aggregateId: `ver_away${i}`,
  eventType: "verification.status_changed",
  tenantId: "ten_test",
  environment: "test" as const,
  payload: { i },
});
const unpublished = async () => (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM verification.outbox WHERE published_at IS NULL`)).rows[0].n;

describe("the outbox relay while the broker is away", () => {
  it("holds up no other statement; its rows wait, then go out once each when the broker is back", async () => {
    const config = parseConfig({ DATA_DIR: dataDir, DATABASE_URL: fresh?.url, EVENT_POLL_INTERVAL_MS: "50" });
    let away = true;
    let calls = 0;
    let release: () => void = () => undefined;
    const sent: EventRecord[] = [];
    const publisher = {
      async publish(events: EventRecord[]) {
        calls++;
        if (!away) return void sent.push(...events);
        // a broker that does not answer: the call hangs until the test lets it fail
        await new Promise<void>((r) => (release = r));
        throw new Error("connect ECONNREFUSED");
      },
    };
    await appendEvents(db, "verification", [event(0)]);
    relay = await startOutboxRelay({ config, db, schema: "verification", logger, publisher });
    await waitFor(async () => calls > 0, 10_000);

    // the publish hangs: the service's other statements still run, and its events still go in
    for (let i = 1; i <= 5; i++) await appendEvents(db, "verification", [event(i)]);
    expect((await db.query<{ one: number }>("SELECT 1 AS one")).rows[0].one).toBe(1);
    expect(await unpublished()).toBe(6);
    expect(sent).toHaveLength(0);

    // the broker is back: the hanging call fails, the next ones go through
    away = false;
    release();
    await waitFor(async () => (await unpublished()) === 0, 10_000);
    expect(sent.map((e) => e.payload.i).sort()).toEqual([0, 1, 2, 3, 4, 5]);
    expect(new Set(sent.map((e) => e.id)).size).toBe(6);
  });
});
