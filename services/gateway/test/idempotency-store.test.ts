import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate, openDatabase, readMigrations, type Database } from "@icv/platform";
import { GatewayStore } from "../src/store.ts";
import { maybeFreshPostgres, type FreshPostgres } from "../../../test/support/fresh-postgres.ts";

let db: Database;
let pgFresh: FreshPostgres | undefined;
let store: GatewayStore;
const scope = { tenantId: "ten_01M80FG3J3K7TWHQ0ET3725RPB", env: "test" as const };
const rec = { method: "POST", path: "/api/v1/verifications", bodyHash: "a".repeat(64) };

beforeAll(async () => {
  pgFresh = await maybeFreshPostgres();
  db = await openDatabase({ url: pgFresh?.url, dataDir: "memory://" });
  await migrate(db, "gateway", readMigrations(path.join(import.meta.dirname, "..", "migrations")));
  store = new GatewayStore(db);
});
afterAll(async () => {
  await db?.close();
  await pgFresh?.drop();
});

describe("idempotency keys in the gateway store", () => {
  it("answers the first claim's record to a second claim, and the stored answer once completed", async () => {
    const t0 = new Date("2026-11-22T10:00:00.000Z");
    expect(await store.claimIdempotencyKey(scope, "k1", rec, t0)).toBeUndefined();
    expect(await store.claimIdempotencyKey(scope, "k1", rec, t0)).toMatchObject({ body_hash: rec.bodyHash, status_code: null });
    await store.completeIdempotencyKey(scope, "k1", 201, { id: "ver_1" });
    expect(await store.claimIdempotencyKey(scope, "k1", rec, new Date(t0.getTime() + 3_600_000))).toMatchObject({
      status_code: 201,
      response_body: { id: "ver_1" },
    });
  });

  it("lets a new request take over a claim left unfinished for over a minute (its process died), not a fresh one", async () => {
    const t0 = new Date("2026-11-22T11:00:00.000Z");
    expect(await store.claimIdempotencyKey(scope, "k2", rec, t0)).toBeUndefined();
    expect(await store.claimIdempotencyKey(scope, "k2", rec, new Date(t0.getTime() + 30_000))).toMatchObject({ status_code: null });
    expect(await store.claimIdempotencyKey(scope, "k2", rec, new Date(t0.getTime() + 61_000))).toBeUndefined();
  });

  it("keeps tenants and environments apart", async () => {
    const t0 = new Date("2026-11-22T12:00:00.000Z");
    expect(await store.claimIdempotencyKey(scope, "k3", rec, t0)).toBeUndefined();
    expect(await store.claimIdempotencyKey({ ...scope, env: "live" }, "k3", rec, t0)).toBeUndefined();
    expect(await store.claimIdempotencyKey({ ...scope, tenantId: "ten_01M80FHXRBAK43MRQW9A90HB8P" }, "k3", rec, t0)).toBeUndefined();
  });
});
