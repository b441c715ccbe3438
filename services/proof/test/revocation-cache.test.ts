// The proof service reads a proof's revocation state from memory after the first read. Two stores
// on one database stand for two workers or replicas, each following the proof events as
// start.ts does: a revocation made through one is seen by the other once its proof.revoked event
// arrives, never later, and by the one that made it at once.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createEventLog,
  createLogger,
  EventCache,
  newId,
  openServiceDatabase,
  parseConfig,
  startOutboxRelay,
  type Database,
  type EventLog,
  type OutboxRelay,
  type Subscription,
} from "@icv/platform";
import { maybeFreshPostgres, type FreshPostgres } from "../../../test/support/fresh-postgres.ts";
import { ProofStore } from "../src/store/proofs.ts";

const MIGRATIONS = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "migrations");
const logger = createLogger({ level: "silent" });
const scope = { tenantId: "ten_01J0000000000000000000CACHE", env: "live" as const };
let pg: FreshPostgres | undefined;
let dataDir: string;
let db: Database;
let relay: OutboxRelay;
const logs: EventLog[] = [];
const subs: Subscription[] = [];
/** Two workers: each its own store (and cache), following the events through its own event log. */
let a: ProofStore;
let b: ProofStore;
/** When b's subscription delivered an event of the proof, per proof id. */
const arrived = new Map<string, number>();

beforeAll(async () => {
  pg = await maybeFreshPostgres();
  dataDir = mkdtempSync(path.join(tmpdir(), "icv-revocation-cache-"));
  const config = parseConfig({ DATA_DIR: dataDir, DATABASE_URL: pg?.url, EVENT_POLL_INTERVAL_MS: "200" });
  db = await openServiceDatabase(config, "proof", MIGRATIONS, logger, { outbox: true });
  await db.query(
    `INSERT INTO proof.signing_keys (kid, environment, public_jwk, private_key_enc, status, created_at) VALUES ('k1', 'live', '{}', 'x', 'active', now())`,
  );
  relay = await startOutboxRelay({ config, db, schema: "proof", logger });
  [a, b] = [new ProofStore(db), new ProofStore(db)];
  // when b's own subscription delivered a revocation (b drops only on events): an extra listener
  // would read the outbox on a schedule of its own and could see the event before b's does
  const dropB = b.revocations.drop.bind(b.revocations);
  b.revocations.drop = (id: string) => {
    dropB(id);
    arrived.set(id, performance.now());
  };
  for (const store of [a, b]) {
    const events = await createEventLog(config, logger);
    logs.push(events);
    subs.push(await store.revocations.follow(events, ["proof"]));
  }
});
afterAll(async () => {
  for (const s of subs) await s.close();
  for (const l of logs) await l.close();
  await relay?.stop();
  await db?.close();
  await pg?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

async function issue(): Promise<string> {
  const id = newId("verification");
  const now = new Date();
  await a.insertProof({
    id,
    scope,
    kid: "k1",
    type: "phone",
    channel: "sms",
    identifierHash: "ab",
    identifierSalt: "00",
    subject: "ab",
    statusList: 0,
    statusIdx: 0,
    method: "test",
    token: "t",
    verifiedAt: now,
    issuedAt: now,
    expiresAt: new Date(now.getTime() + 3600_000),
  });
  return id;
}

describe("the revocation state cache", () => {
  it("answers a second read from memory", async () => {
    const id = await issue();
    const misses = b.revocations.misses;
    expect((await b.revocationState(id))?.revoked_at).toBeNull();
    const hits = b.revocations.hits;
    expect((await b.revocationState(id))?.revoked_at).toBeNull();
    expect(b.revocations.hits).toBe(hits + 1);
    expect(b.revocations.misses).toBe(misses + 1);
  });

  it("never remembers an unknown id (its proof may be stored a moment later)", async () => {
    const id = newId("verification");
    expect(await b.revocationState(id)).toBeUndefined();
    await a.insertProof({
      id,
      scope,
      kid: "k1",
      type: "phone",
      channel: "sms",
      identifierHash: "ab",
      identifierSalt: "00",
      subject: "ab",
      statusList: 0,
      statusIdx: 1,
      method: "test",
      token: "t",
      verifiedAt: new Date(),
      issuedAt: new Date(),
      expiresAt: new Date(Date.now() + 3600_000),
    });
    expect(await b.revocationState(id)).toMatchObject({ revoked_at: null, environment: "live" });
  });

  it("a revocation is seen at once where it was made, and by the other worker as soon as its event arrives", async () => {
    const id = await issue();
    // both workers hold the proof as valid
    expect((await a.revocationState(id))?.revoked_at).toBeNull();
    expect((await b.revocationState(id))?.revoked_at).toBeNull();
    const revokedAt = new Date();
    await a.revoke(scope, id, "fraud", revokedAt);
    expect((await a.revocationState(id))?.revoked_reason).toBe("fraud");
    // b keeps reading until it sees the revocation; every read after the event arrived must see it
    const started = performance.now();
    for (;;) {
      const readAt = performance.now();
      const state = await b.revocationState(id);
      const eventAt = arrived.get(id);
      if (eventAt !== undefined && eventAt < readAt) expect(state?.revoked_at, "a read after the event arrived").not.toBeNull();
      if (state?.revoked_at) break;
      expect(performance.now() - started, "the event reached the other worker").toBeLessThan(10_000);
      await new Promise((r) => setTimeout(r, 5));
    }
    expect((await b.revocationState(id))?.revoked_reason).toBe("fraud");
  });
});

describe("EventCache", () => {
  it("does not store what a read saw when its id was dropped while the read ran", async () => {
    const cache = new EventCache<{ v: number }>(() => true);
    let finish: (v: { v: number }) => void = () => undefined;
    const slow = cache.load("x", () => new Promise((r) => (finish = r)));
    cache.drop("x"); // the row changed while the read was on its way
    finish({ v: 1 });
    expect(await slow).toEqual({ v: 1 });
    expect(cache.size).toBe(0);
    expect(await cache.load("x", async () => ({ v: 2 }))).toEqual({ v: 2 });
    expect(await cache.load("x", async () => ({ v: 3 }))).toEqual({ v: 2 });
  });

  it("holds at most its bound, the least recently used going first", async () => {
    const cache = new EventCache<number>(() => true, 2);
    await cache.load("a", async () => 1);
    await cache.load("b", async () => 2);
    await cache.load("a", async () => 0); // a used again
    await cache.load("c", async () => 3); // b goes
    expect(cache.size).toBe(2);
    expect(await cache.load("b", async () => 20)).toBe(20);
    expect(await cache.load("c", async () => 30)).toBe(3);
  });
});
