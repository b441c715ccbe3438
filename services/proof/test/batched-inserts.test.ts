// Proofs issued at once are written together (platform batched(): one statement for the rows of a
// turn of the event loop, issue 33). Each caller must still get its own answer: stored, or "exists"
// for an id already taken; a row the database refuses fails only its own call; every proof stored
// has exactly its one proof.issued event, with its fields, and a refused one has none.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createLogger, newId, openServiceDatabase, parseConfig, type Database } from "@icv/platform";
import { maybeFreshPostgres, type FreshPostgres } from "../../../test/support/fresh-postgres.ts";
import { ProofStore, type NewProof } from "../src/store/proofs.ts";

const MIGRATIONS = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "migrations");
const scope = { tenantId: "ten_01J0000000000000000000BATCH", env: "live" as const };
let pg: FreshPostgres | undefined;
let dataDir: string;
let db: Database;
let store: ProofStore;

beforeAll(async () => {
  pg = await maybeFreshPostgres();
  dataDir = mkdtempSync(path.join(tmpdir(), "icv-batched-proofs-"));
  db = await openServiceDatabase(parseConfig({ DATA_DIR: dataDir, DATABASE_URL: pg?.url }), "proof", MIGRATIONS, createLogger({ level: "silent" }), {
    outbox: true,
  });
  await db.query(
    `INSERT INTO proof.signing_keys (kid, environment, public_jwk, private_key_enc, status, created_at) VALUES ('k1', 'live', '{}', 'x', 'active', now())`,
  );
  store = new ProofStore(db);
});
afterAll(async () => {
  await db?.close();
  await pg?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

const proof = (i: number, over: Partial<NewProof> = {}): NewProof => {
  const now = new Date(Date.UTC(2026, 10, 28, 12, 0, i));
  return {
    id: newId("verification"),
    scope,
    kid: "k1",
    type: "phone",
    channel: "sms",
    identifierHash: `hash-${i}`,
    identifierSalt: `salt-${i}`,
    subject: `subject-${i}`,
    externalUserId: i % 2 ? `user-${i}` : undefined,
    statusList: 3,
    statusIdx: 100 + i,
    method: "test",
    token: `token-${i}`,
    sdJwtVc: i % 3 ? undefined : `vc-${i}`,
    holderKey: i % 3 ? undefined : { kty: "EC", crv: "P-256", x: `x${i}`, y: `y${i}` },
    verifiedAt: now,
    issuedAt: now,
    expiresAt: new Date(now.getTime() + 3600_000),
    ...over,
  };
};

const insertsOf = (spy: { mock: { calls: unknown[][] } }) => spy.mock.calls.filter(([sql]) => String(sql).includes("INSERT INTO proof.proofs")).length;

describe(`proofs issued at once (${process.env.DATABASE_URL ? "Postgres" : "PGlite"})`, () => {
  it("are written in fewer statements than proofs, each stored as given with its one event", async () => {
    const ps = Array.from({ length: 12 }, (_, i) => proof(i));
    const spy = vi.spyOn(db, "query");
    const answers = await Promise.all(ps.map((p) => store.insertProof(p)));
    const statements = insertsOf(spy);
    spy.mockRestore();
    expect(answers).toEqual(ps.map(() => true));
    expect(statements).toBeLessThan(ps.length);
    for (const [i, p] of ps.entries()) {
      const row = (await store.proof(p.id))!;
      expect(row).toMatchObject({
        tenant_id: scope.tenantId,
        environment: "live",
        identifier_hash: `hash-${i}`,
        identifier_salt: `salt-${i}`,
        subject: `subject-${i}`,
        external_user_id: p.externalUserId ?? null,
        token: `token-${i}`,
        sd_jwt_vc: p.sdJwtVc ?? null,
        holder_key: p.holderKey ?? null,
        status_list: 3,
        status_idx: 100 + i,
        method: "test",
      });
      expect(row.issued_at.getTime()).toBe(p.issuedAt.getTime());
      expect(row.expires_at.getTime()).toBe(p.expiresAt.getTime());
      const events = await db.query<{ event_type: string; payload: Record<string, unknown> }>(
        `SELECT event_type, payload FROM proof.outbox WHERE aggregate_id = $1`,
        [p.id],
      );
      expect(events.rows.map((e) => e.event_type)).toEqual(["proof.issued"]);
      expect(events.rows[0].payload).toMatchObject({ proof_id: p.id, status_idx: 100 + i, format: p.sdJwtVc ? "sd-jwt-vc" : "jwt" });
    }
  });

  it("answer 'exists' for an id already stored and for a second call with the same id, storing the first only", async () => {
    const first = proof(20);
    expect(await store.insertProof(first)).toBe(true);
    const again = proof(21, { id: first.id, token: "another" });
    const twin = proof(22);
    const fresh = Array.from({ length: 5 }, (_, i) => proof(30 + i));
    const answers = await Promise.all([again, twin, { ...twin, token: "twin-2" }, ...fresh].map((p) => store.insertProof(p)));
    expect(answers).toEqual([false, true, false, ...fresh.map(() => true)]);
    expect((await store.proof(first.id))!.token).toBe("token-20");
    expect((await store.proof(twin.id))!.token).toBe("token-22");
    const events = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM proof.outbox WHERE aggregate_id = ANY($1::text[])`, [[first.id, twin.id]]);
    expect(events.rows[0].n).toBe(2);
  });

  it("fail only the call whose row the database refuses; the others are stored with their events", async () => {
    const good = Array.from({ length: 6 }, (_, i) => proof(40 + i));
    const bad = proof(50, { kid: "no-such-key" }); // the signing key's foreign key refuses it
    const settled = await Promise.allSettled([...good.slice(0, 3), bad, ...good.slice(3)].map((p) => store.insertProof(p)));
    expect(settled.map((s) => s.status)).toEqual(["fulfilled", "fulfilled", "fulfilled", "rejected", "fulfilled", "fulfilled", "fulfilled"]);
    expect(String((settled[3] as PromiseRejectedResult).reason)).toMatch(/23503 on proofs_kid_fkey/);
    for (const p of good) expect((await store.proof(p.id))?.token).toBe(p.token);
    expect(await store.proof(bad.id)).toBeUndefined();
    const events = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM proof.outbox WHERE aggregate_id = $1`, [bad.id]);
    expect(events.rows[0].n).toBe(0);
  });
});
