import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock, migrate, newId, openDatabase, readMigrations, sealEventMetadata, type EventRecord, type SealingDatabase } from "@icv/platform";
import { maybeFreshPostgres, type FreshPostgres } from "../../../test/support/fresh-postgres.ts";
import { deliveryConsumer } from "../src/consumer.ts";
import type { DeliveryRow } from "../src/store/rows.ts";
import { webhookDatabase } from "../src/store/sealing.ts";
import { SettingsStore } from "../src/store/settings.ts";

const MIGRATIONS = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "migrations");
const clock = new ManualClock(new Date("2026-03-01T12:00:00.000Z"));
let pg: FreshPostgres | undefined;
let db: SealingDatabase;
let store: SettingsStore;

beforeAll(async () => {
  pg = await maybeFreshPostgres();
  db = webhookDatabase(await openDatabase({ url: pg?.url, dataDir: "memory://" }));
  await migrate(db, "webhook", readMigrations(MIGRATIONS));
  store = new SettingsStore(db);
});
afterAll(async () => {
  await db?.close();
  await pg?.drop();
});

const event = (tenantId: string, eventType: string, payload: Record<string, unknown> = {}): EventRecord => ({
  id: newId("event"),
  aggregateType: eventType.split(".")[0],
  aggregateId: "vreq_01J00000000000000000000001",
  eventType,
  tenantId,
  environment: "test",
  payload: { request_id: "vreq_01J00000000000000000000001", status: "completed", ...payload },
  createdAt: clock.now(),
});

/** Runs the consumer's callbacks the way the event log does: handle in one transaction, then afterCommit. */
async function consume(events: EventRecord[]): Promise<number> {
  let woken = 0;
  const c = deliveryConsumer({ clock, retryDelaysMs: [30_000, 120_000], onCommitted: () => woken++, pd: db.personalData, db });
  await db.tx(async (q) => {
    for (const e of events) await c.handle(q, e);
  });
  c.afterCommit?.(events);
  return woken;
}

const rowsOf = async (tenantId: string) => (await db.query<DeliveryRow>(`SELECT * FROM webhook.deliveries WHERE tenant_id = $1 ORDER BY url`, [tenantId])).rows;

describe("the delivery consumer", () => {
  it("makes one due delivery per target URL, once per event, and wakes the deliverer", async () => {
    const tenant = newId("tenant");
    await store.ensureSecrets(tenant, { live: "whsec_bGl2ZQ==", test: "whsec_dGVzdA==" }, clock.now());
    await store.setEndpoint(tenant, "test", "https://tenant.example/hook", clock.now());
    const e = event(tenant, "verification_request.completed", { callback_url: "https://shop.example/cb" });
    expect(await consume([e, e])).toBe(1);
    await consume([e]); // redelivered: the event log's dedupe is the first guard, this the second
    const rows = await rowsOf(tenant);
    expect(rows.map((r) => r.url)).toEqual(["https://shop.example/cb", "https://tenant.example/hook"]);
    for (const r of rows) {
      expect(r).toMatchObject({
        status: "pending",
        attempts: 0,
        max_attempts: 3,
        event_id: e.id,
        event_type: "verification_request.completed",
        verification_request_id: "vreq_01J00000000000000000000001",
        next_retry_at: clock.now(),
      });
      expect(r.id).toMatch(/^whd_/);
      expect(r.request_headers).toMatchObject({ "content-type": "application/json", "webhook-id": r.id });
      expect(JSON.parse(r.payload)).not.toHaveProperty("callback_url");
    }
    expect(rows[0].payload).toBe(rows[1].payload);
  });

  it("ignores events that are not webhooks and tenants with no target", async () => {
    const tenant = newId("tenant");
    await store.setEndpoint(tenant, "test", "https://tenant.example/hook", clock.now());
    await consume([event(tenant, "verification.status_changed"), event(tenant, "webhook_secret.rotated")]);
    const quiet = newId("tenant");
    await consume([event(quiet, "verification_request.expired")]);
    expect(await rowsOf(tenant)).toEqual([]);
    expect(await rowsOf(quiet)).toEqual([]);
  });

  it("names as relevant only events that can make a delivery or redact one; the others make nothing when handled", async () => {
    const withEndpoint = newId("tenant");
    const without = newId("tenant");
    await store.setEndpoint(withEndpoint, "test", "https://tenant.example/hook", clock.now());
    const c = deliveryConsumer({ clock, retryDelaysMs: [30_000], onCommitted: () => {}, pd: db.personalData, db });
    const kept = [
      event(withEndpoint, "verification_request.completed"),
      event(without, "verification_request.partial", { callback_url: "https://shop.example/cb" }),
      event(without, "verification.redacted", { verification_id: newId("verification"), status: "verified", proof_revoked: false, reason: "request" }),
    ];
    const passed = [event(without, "verification_request.completed"), { ...event(withEndpoint, "verification_request.expired"), environment: "live" as const }];
    expect(await c.relevant([passed[0], ...kept, passed[1]])).toEqual(kept);
    // what it passes over would have made no delivery
    await consume(passed);
    expect(await rowsOf(without)).toEqual([]);
    expect((await rowsOf(withEndpoint)).filter((r) => r.environment === "live")).toEqual([]);
  });

  it("gives a tenant made without secrets one before its first delivery", async () => {
    const tenant = newId("tenant");
    await consume([event(tenant, "verification_request.partial", { callback_url: "https://shop.example/cb" })]);
    const [secret] = await store.secrets(tenant);
    expect(secret).toMatchObject({ environment: "test", secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/) });
    expect(await rowsOf(tenant)).toHaveLength(1);
  });

  it("opens a completed event's sealed client_metadata into the body, stores the body sealed, and redaction clears it", async () => {
    const tenant = newId("tenant");
    await store.setEndpoint(tenant, "test", "https://tenant.example/hook", clock.now());
    const verificationId = newId("verification");
    const meta = { order: "ORD-SEALED-7731", plan: "pro" };
    const completed: EventRecord = {
      ...event(tenant, "verification.completed"),
      aggregateType: "verification",
      aggregateId: verificationId,
      payload: {
        verification_id: verificationId,
        type: "email",
        channel: "email",
        status: "verified",
        external_user_id: "user-sealed-1",
        client_metadata: null,
        proof: { token: "eyJ.a.b", sd_jwt_vc: "eyJ.c.d~WyJz~" },
        sealed_client_metadata: sealEventMetadata(db.personalData, verificationId, meta),
      },
    };
    await consume([completed]);
    // read through the store: the body the receiver gets, with the tenant's metadata opened
    const [row] = await rowsOf(tenant);
    const body = JSON.parse(row.payload);
    expect(body).toMatchObject({ event: "verification.completed", verification_id: verificationId, client_metadata: meta, external_user_id: "user-sealed-1" });
    expect(body).not.toHaveProperty("sealed_client_metadata");
    // at rest: sealed under the current key version, nothing of it in clear
    // (selected under another name: the store opens a column named payload)
    const raw = await db.query<{ stored: string; key_version: number }>(`SELECT payload AS stored, key_version FROM webhook.deliveries WHERE event_id = $1`, [
      completed.id,
    ]);
    expect(raw.rows[0].stored).toMatch(/^pd1\./);
    expect(raw.rows[0].stored).not.toContain("ORD-SEALED");
    expect(raw.rows[0].key_version).toBe(db.personalData.currentVersion);

    const redacted: EventRecord = {
      ...event(tenant, "verification.redacted"),
      aggregateType: "verification",
      aggregateId: verificationId,
      payload: { verification_id: verificationId, type: "email", channel: "email", status: "verified", proof_revoked: false, reason: "request" },
    };
    await consume([redacted]);
    const after = (await rowsOf(tenant)).find((r) => r.event_type === "verification.completed");
    const cleared = JSON.parse(after?.payload ?? "{}");
    expect(cleared).toMatchObject({ client_metadata: null, external_user_id: null, proof: { token: "eyJ.a.b" } });
    expect(cleared.proof).not.toHaveProperty("sd_jwt_vc");
    const rawAfter = await db.query<{ stored: string }>(`SELECT payload AS stored FROM webhook.deliveries WHERE event_id = $1`, [completed.id]);
    expect(rawAfter.rows[0].stored).toMatch(/^pd1\./);
  });
});
