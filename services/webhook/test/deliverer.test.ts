import { createHmac, timingSafeEqual } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Webhook } from "standardwebhooks";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  createLogger, createOutboundClient, migrate, newId, openDatabase, readMigrations, systemClock, type Database, type EventRecord,
} from "@icv/platform";
import { maybeFreshPostgres, type FreshPostgres } from "../../../test/support/fresh-postgres.ts";
import { startReceiver, type Receiver } from "../../../test/support/receiver.ts";
import { baseHeaders, Deliverer, outboundSend, USER_AGENT, type DelivererOptions } from "../src/deliverer.ts";
import { plannedDeliveries } from "../src/payload.ts";
import { maxAttempts } from "../src/schedule.ts";
import { WebhookStore, type DeliveryRow } from "../src/store.ts";

const MIGRATIONS = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "migrations");
const logger = createLogger({ level: "silent" });
const TENANT = newId("tenant");

let pg: FreshPostgres | undefined;
let db: Database;
let store: WebhookStore;
let secret: string;
let receiver: Receiver;
const running: Deliverer[] = [];
const outbound = createOutboundClient({ allowPrivate: true, timeoutMs: 5_000 });

beforeAll(async () => {
  pg = await maybeFreshPostgres();
  db = await openDatabase({ url: pg?.url, dataDir: "memory://" });
  await migrate(db, "webhook", readMigrations(MIGRATIONS));
  store = new WebhookStore(db);
  secret = (await store.ensureSecrets(TENANT, { live: "whsec_bGl2ZWxpdmVsaXZlbGl2ZWxpdmVsaXZlbGl2ZWxpdmU=", test: "whsec_dGVzdHRlc3R0ZXN0dGVzdHRlc3R0ZXN0dGVzdHRlc3Q=" }, new Date())).test;
  receiver = await startReceiver();
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((d) => d.stop()));
  await db.query(`DELETE FROM webhook.deliveries`); // no test sees another's rows
  receiver.answer(200);
  receiver.requests.length = 0;
});
afterAll(async () => {
  await receiver?.close();
  outbound.close();
  await db?.close();
  await pg?.drop();
});

function deliverer(over: Partial<DelivererOptions> = {}): Deliverer {
  const d = new Deliverer({
    queue: store,
    send: outboundSend(outbound),
    clock: systemClock,
    logger,
    concurrency: 10,
    leaseMs: 10_000,
    retryDelaysMs: [100, 100],
    pollMs: 50,
    drainMs: 1_000,
    random: () => 0.5,
    ...over,
  });
  running.push(d);
  return d.start();
}

/** Inserts n deliveries of fresh verification.completed events to url; answers their ids. */
async function plant(n: number, url: string, delays: number[] = [100, 100]): Promise<string[]> {
  const events: EventRecord[] = Array.from({ length: n }, (_, i) => ({
    id: newId("event"),
    aggregateType: "verification",
    aggregateId: newId("verification"),
    eventType: "verification.completed",
    tenantId: TENANT,
    environment: "test",
    payload: { verification_id: `ver_${i}`, status: "verified" },
    createdAt: new Date(),
  }));
  await db.tx(async (q) => {
    for (const e of events) await WebhookStore.insertDeliveries(q, plannedDeliveries(e, url), maxAttempts(delays), baseHeaders, new Date());
  });
  const r = await db.query<{ id: string }>(`SELECT id FROM webhook.deliveries WHERE event_id = ANY($1) ORDER BY id`, [events.map((e) => e.id)]);
  return r.rows.map((x) => x.id);
}

const row = async (id: string): Promise<DeliveryRow> => (await db.query<DeliveryRow>(`SELECT * FROM webhook.deliveries WHERE id = $1`, [id])).rows[0];

async function until(id: string, pred: (r: DeliveryRow) => boolean, timeoutMs = 5_000): Promise<DeliveryRow> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const r = await row(id);
    if (pred(r)) return r;
    if (Date.now() > end) throw new Error(`delivery ${id} stayed ${r.status} (attempts ${r.attempts})`);
    await new Promise((res) => setTimeout(res, 20));
  }
}

describe("deliverer", () => {
  it("POSTs the stored body, signed, once, and records the attempt", async () => {
    const [id] = await plant(1, receiver.url);
    deliverer();
    const r = await until(id, (x) => x.status === "delivered");
    const [req] = receiver.requests;
    expect(receiver.requests).toHaveLength(1);
    expect(req.method).toBe("POST");
    expect(req.body).toBe(r.payload);
    expect(req.headers).toMatchObject({ "content-type": "application/json", "user-agent": USER_AGENT, "webhook-id": id });
    const want = createHmac("sha256", secret).update(req.body).digest("hex");
    expect(timingSafeEqual(Buffer.from(String(req.headers["x-service-signature"])), Buffer.from(want))).toBe(true);
    expect(new Webhook(secret).verify(req.body, req.headers as Record<string, string>)).toMatchObject({ event: "verification.completed", test: true });
    expect(r).toMatchObject({ attempts: 1, max_attempts: 3, response_status: 200, response_body: "ok", error_message: null, next_retry_at: null });
    expect(r.attempt_log).toEqual([{ attempt: 1, at: r.last_attempt_at!.toISOString(), status: 200, duration_ms: expect.any(Number) }]);
    expect(r.request_headers["x-service-signature"]).toBe(req.headers["x-service-signature"]);
  });

  it("retries a failing receiver on the schedule, then fails; a requeue allows one more attempt", async () => {
    receiver.answer(500);
    const [id] = await plant(1, receiver.url);
    deliverer();
    const failed = await until(id, (x) => x.status === "failed");
    expect(receiver.requests).toHaveLength(3);
    const gaps = receiver.requests.slice(1).map((r, i) => r.at - receiver.requests[i].at);
    for (const g of gaps) expect(g).toBeGreaterThanOrEqual(90);
    expect(new Set(receiver.requests.map((r) => r.headers["webhook-id"]))).toEqual(new Set([id]));
    expect(failed).toMatchObject({ attempts: 3, max_attempts: 3, response_status: 500, error_message: "HTTP 500", next_retry_at: null });
    expect(failed.attempt_log.map((a) => [a.attempt, a.status, a.error])).toEqual([
      [1, 500, "HTTP 500"],
      [2, 500, "HTTP 500"],
      [3, 500, "HTTP 500"],
    ]);

    receiver.answer(200);
    const scope = { tenantId: TENANT, env: "test" as const };
    expect(await store.requeueFailed(scope, id, new Date())).toMatchObject({ status: "pending", max_attempts: 4 });
    expect(await store.requeueFailed(scope, id, new Date())).toBeUndefined();
    const delivered = await until(id, (x) => x.status === "delivered");
    expect(delivered).toMatchObject({ attempts: 4, max_attempts: 4, response_status: 200, error_message: null });
    expect(receiver.requests).toHaveLength(4);
  });

  it("honours Retry-After on 429", async () => {
    receiver.answer({ status: 429, headers: { "retry-after": "2" } });
    const [id] = await plant(1, receiver.url);
    deliverer();
    const r = await until(id, (x) => x.attempts === 1);
    expect(r.status).toBe("pending");
    expect(r.next_retry_at!.getTime() - r.last_attempt_at!.getTime()).toBe(2_000);
  });

  it("counts a redirect as a failed attempt without following it", async () => {
    receiver.answer({ status: 302, headers: { location: "http://127.0.0.1:1/elsewhere" } });
    const [id] = await plant(1, receiver.url);
    deliverer();
    const r = await until(id, (x) => x.attempts === 1);
    expect(r).toMatchObject({ status: "pending", response_status: 302, error_message: "HTTP 302: redirects are not followed" });
    expect(receiver.requests).toHaveLength(1);
  });

  it("fails a refused target at once with the reason, sending nothing", async () => {
    const guarded = createOutboundClient({ allowPrivate: false });
    const [id] = await plant(1, receiver.url);
    deliverer({ send: outboundSend(guarded) });
    const r = await until(id, (x) => x.status === "failed");
    expect(r).toMatchObject({ attempts: 1, response_status: null, error_message: "refused: 127.0.0.1 is a loopback address" });
    expect(r.attempt_log[0]).toMatchObject({ attempt: 1, error: "refused: 127.0.0.1 is a loopback address" });
    expect(receiver.requests).toHaveLength(0);
    guarded.close();
  });

  it("two deliverers on one database send every delivery exactly once", async () => {
    const ids = await plant(300, receiver.url);
    deliverer({ concurrency: 25 });
    deliverer({ concurrency: 25 });
    const end = Date.now() + 20_000;
    for (;;) {
      const r = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook.deliveries WHERE id = ANY($1) AND status = 'delivered'`, [ids]);
      if (r.rows[0].n === ids.length) break;
      if (Date.now() > end) throw new Error(`only ${r.rows[0].n} of ${ids.length} delivered`);
      await new Promise((res) => setTimeout(res, 25));
    }
    const sent = receiver.requests.map((r) => String(r.headers["webhook-id"]));
    expect(sent).toHaveLength(ids.length);
    expect(new Set(sent)).toEqual(new Set(ids));
  });

  it("sends again, after the lease expires, what a crashed sender was sending", async () => {
    receiver.answer((_req, n) => (n === 1 ? "hold" : 200));
    const [id] = await plant(1, receiver.url);
    const first = deliverer({ leaseMs: 800, drainMs: 0 });
    await receiver.waitFor(1);
    await first.stop(); // cut off mid-send: nothing is recorded, the lease stays
    expect(await row(id)).toMatchObject({ status: "pending", attempts: 0, attempt_log: [] });
    deliverer({ leaseMs: 800 });
    await new Promise((res) => setTimeout(res, 300));
    expect(receiver.requests).toHaveLength(1); // the lease still holds it
    const r = await until(id, (x) => x.status === "delivered");
    expect(receiver.requests).toHaveLength(2);
    expect(receiver.requests[0].aborted).toBe(true);
    expect(receiver.requests[1].at - receiver.requests[0].at).toBeGreaterThanOrEqual(700);
    expect(receiver.requests[1].headers["webhook-id"]).toBe(id);
    expect(r).toMatchObject({ attempts: 1, response_status: 200 });
  });

  it("ignores the result of a sender whose lease was taken over", async () => {
    const [id] = await plant(1, receiver.url);
    const t0 = new Date(Date.now() + 60_000); // due, and far from any running deliverer's view
    const [a] = await store.claimDue(t0, new Date(t0.getTime() + 1_000), "token-a", 1);
    expect(a).toMatchObject({ id, lease_token: "token-a", secret });
    expect(await store.claimDue(t0, new Date(t0.getTime() + 1_000), "token-x", 10)).toEqual([]);
    const t1 = new Date(t0.getTime() + 1_000);
    const [b] = await store.claimDue(t1, new Date(t1.getTime() + 1_000), "token-b", 1);
    expect(b.id).toBe(id);
    const result = (token: string, status: number) => ({
      id,
      leaseToken: token,
      status: "delivered" as const,
      responseStatus: status,
      responseBody: "",
      errorMessage: null,
      entry: { attempt: 1, at: t1.toISOString(), status, duration_ms: 1 },
      nextRetryAt: null,
      headers: {},
      at: t1,
    });
    await store.recordResults([result("token-a", 201)]);
    expect(await row(id)).toMatchObject({ status: "pending", attempts: 0 });
    await store.recordResults([result("token-b", 202)]);
    expect(await row(id)).toMatchObject({ status: "delivered", attempts: 1, response_status: 202 });
  });
});
