// The embedded database (PGlite) runs no autovacuum: it has no background workers. Without
// vacuumEmbedded the space of deleted rows is never used again (the outbox prunes its published
// events every hour, so an embedded process's data directory would grow for as long as it runs),
// and the planner never learns a table's size. PGlite in a data directory, in either test mode.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { openDatabase, vacuumEmbedded, type Database } from "../src/database.ts";

describe("the embedded database's vacuum", () => {
  const opened: { db: Database; dir: string }[] = [];
  afterEach(async () => {
    for (const { db, dir } of opened.splice(0)) {
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
  const open = async (vacuumEveryMs?: number) => {
    const dir = mkdtempSync(path.join(tmpdir(), "icv-vacuum-"));
    const db = await openDatabase({ dataDir: dir, vacuumEveryMs });
    opened.push({ db, dir });
    await db.exec("CREATE TABLE events (id int PRIMARY KEY, payload text)");
    return db;
  };
  // 2,000 rows of 500 bytes (about 1 MB), from id `from` on
  const fill = (db: Database, from: number) =>
    db.query("INSERT INTO events SELECT i, repeat('x', 500) FROM generate_series($1::int, $1::int + 1999) i", [from]);
  const size = async (db: Database) => (await db.query<{ n: number }>("SELECT pg_relation_size('events')::int AS n")).rows[0].n;
  const estimatedRows = async (db: Database) => (await db.query<{ n: number }>("SELECT reltuples::int AS n FROM pg_class WHERE relname = 'events'")).rows[0].n;

  it("without it, the rows written after a delete take new space: the table doubles", async () => {
    const db = await open();
    await fill(db, 0);
    const first = await size(db);
    await db.query("DELETE FROM events");
    await fill(db, 2000);
    expect(await size(db)).toBeGreaterThan(first * 1.8);
  });

  it("after it, they take the deleted rows' space, and the planner knows how many rows the table holds", async () => {
    const db = await open();
    await fill(db, 0);
    const first = await size(db);
    expect(await estimatedRows(db)).toBe(-1); // never analyzed
    await db.query("DELETE FROM events");
    await vacuumEmbedded(db);
    await fill(db, 2000);
    expect(await size(db)).toBeLessThanOrEqual(first);
    await vacuumEmbedded(db);
    expect(await estimatedRows(db)).toBe(2000);
  });

  it("runs by itself on a data directory's database, every vacuumEveryMs", async () => {
    const db = await open(50);
    await fill(db, 0);
    await vi.waitFor(async () => expect(await estimatedRows(db)).toBe(2000), { timeout: 5000, interval: 50 });
    await db.query("DELETE FROM events");
    await vi.waitFor(async () => expect(await estimatedRows(db)).toBe(0), { timeout: 5000, interval: 50 });
  });
});
