// Creations and completions made at once are written together (platform batched(): one statement
// for the rows of a turn of the event loop, issue 33). Each caller must still get its own row as
// stored, every row its own events and test message and no other's, and a verification that left
// pending behind the process's back must not be completed by the batch that completes the others.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Scope } from "@icv/platform";
import type { VerificationRow } from "../src/store/rows.ts";
import type { VerificationStore } from "../src/store/verifications.ts";
import { createVerification } from "../src/verifications/create.ts";
import type { UseCaseDeps } from "../src/verifications/deps.ts";
import { storeRig } from "./support/use-cases.ts";

const scope: Scope = { tenantId: "ten_batched", env: "test" };

let rig: Awaited<ReturnType<typeof storeRig>>;
let database: typeof rig.database;
let store: VerificationStore;
let deps: UseCaseDeps;

beforeAll(async () => {
  rig = await storeRig(4);
  ({ database, store, deps } = rig);
});
afterAll(async () => {
  await rig?.close();
});

/** The SQL texts sent to the database while `fn` runs. */
async function statementsDuring<T>(fn: () => Promise<T>): Promise<{ out: T; sql: string[] }> {
  const spy = vi.spyOn(database.db, "query");
  try {
    const out = await fn();
    return { out, sql: spy.mock.calls.map(([text]) => String(text)) };
  } finally {
    spy.mockRestore();
  }
}

const eventsOf = async (id: string) =>
  (
    await database.db.query<{ event_type: string; payload: Record<string, unknown> }>(
      `SELECT event_type, payload FROM verification.outbox WHERE aggregate_id = $1 ORDER BY id`,
      [id],
    )
  ).rows;

async function createMany(n: number, tag: string): Promise<VerificationRow[]> {
  const channels = ["telegram", "whatsapp", "sms"];
  const rows = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      createVerification(deps, scope, {
        type: "phone",
        channel: channels[i % 3],
        identifier: `+3706${tag}${String(i).padStart(5, "0")}`,
        externalUserId: `user-${tag}-${i}`,
        clientMetadata: { i, tag },
      } as Parameters<typeof createVerification>[2]),
    ),
  );
  return rows.map((r) => r.row);
}

describe(`writes made at once (${process.env.DATABASE_URL ? "Postgres" : "PGlite"})`, () => {
  it("creations: fewer statements than rows; each stored as answered, with its own event and test message", async () => {
    const { out: rows, sql } = await statementsDuring(() => createMany(10, "91"));
    expect(sql.filter((s) => s.includes("INSERT INTO verification.verifications")).length).toBeLessThan(rows.length);
    for (const row of rows) {
      const read = (await store.get(scope, row.id)) as unknown as Record<string, unknown>;
      expect(Object.fromEntries(Object.keys(row).map((k) => [k, read[k]]))).toEqual(row);
      const events = await eventsOf(row.id);
      expect(events.map((e) => [e.event_type, e.payload.status])).toEqual([["verification.status_changed", "pending"]]);
      const messages = await store.testMessages(scope, { verificationId: row.id, limit: 10, offset: 0 });
      expect(messages.total).toBe(1);
      expect(messages.rows[0].verification_id).toBe(row.id);
    }
  });

  it("completions: fewer statements than rows; one that left pending meanwhile is not completed, the others are", async () => {
    const rows = await createMany(10, "92");
    const gone = new Set([rows[1].id, rows[4].id, rows[8].id]);
    // expired and failed behind this process's back, after it read the rows
    await database.db.query(`UPDATE verification.verifications SET status = CASE WHEN id = $1 THEN 'failed' ELSE 'expired' END WHERE id = ANY($2::text[])`, [
      rows[4].id,
      [...gone],
    ]);
    const at = new Date();
    const { out: answers, sql } = await statementsDuring(() =>
      Promise.all(
        rows.map((v, i) =>
          store.markVerified(v, { token: `eyJ.token-${i}.sig`, expiresAt: new Date(at.getTime() + 3600_000), method: "test", identifierSalt: `salt-${i}` }, at),
        ),
      ),
    );
    expect(sql.filter((s) => s.includes("UPDATE verification.verifications")).length).toBeLessThan(rows.length);
    for (const [i, v] of rows.entries()) {
      const events = (await eventsOf(v.id)).slice(1);
      const read = (await store.get(scope, v.id))!;
      if (gone.has(v.id)) {
        expect(answers[i], v.id).toBeUndefined();
        expect(read.status).toBe(i === 4 ? "failed" : "expired");
        expect(read.proof_token).toBeNull();
        expect(events).toEqual([]);
        continue;
      }
      expect(answers[i]).toMatchObject({ status: "verified", proof_token: `eyJ.token-${i}.sig`, proof_identifier_salt: `salt-${i}` });
      expect(read).toMatchObject({ status: "verified", proof_token: `eyJ.token-${i}.sig`, proof_identifier_salt: `salt-${i}`, method: "test" });
      expect(read.verified_at?.getTime()).toBe(at.getTime());
      expect(events.map((e) => [e.event_type, e.payload.status])).toEqual([
        ["verification.status_changed", "verified"],
        ["verification.completed", "verified"],
      ]);
      expect((events[1].payload.proof as { token: string }).token).toBe(`eyJ.token-${i}.sig`);
    }
  });

  it("completions: each one's events are published after its earlier events, also beside an older completion in its batch", async () => {
    const early = new Date();
    const [older] = await createMany(1, "93");
    await new Promise((r) => setTimeout(r, 5));
    const [newer] = await createMany(1, "94"); // created after `early`, completed in the same statement as a completion timed `early`
    const token = (i: number) => ({ token: `eyJ.order-${i}.sig`, expiresAt: new Date(Date.now() + 3600_000), method: "test" as const, identifierSalt: "" });
    await Promise.all([store.markVerified(older, token(1), early), store.markVerified(newer, token(2), new Date())]);
    // the relay publishes an outbox oldest first: by created_at, then id
    const published = await database.db.query<{ event_type: string; status: string }>(
      `SELECT event_type, payload->>'status' AS status FROM verification.outbox WHERE aggregate_id = $1 ORDER BY created_at, id`,
      [newer.id],
    );
    expect(published.rows.map((e) => [e.event_type, e.status])).toEqual([
      ["verification.status_changed", "pending"],
      ["verification.status_changed", "verified"],
      ["verification.completed", "verified"],
    ]);
  });
});
