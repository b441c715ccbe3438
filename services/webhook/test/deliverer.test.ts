import { createHmac, timingSafeEqual } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Webhook } from "standardwebhooks";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  createLogger,
  createOutboundClient,
  ManualClock,
  migrate,
  newId,
  openDatabase,
  readMigrations,
  systemClock,
  type SealingDatabase,
  type EventRecord,
} from "@icv/platform";
import { maybeFreshPostgres, type FreshPostgres } from "../../../test/support/fresh-postgres.ts";
import { startReceiver, type Receiver } from "../../../test/support/receiver.ts";
import { lineCollector } from "../../../packages/platform/test/support/log-lines.ts";
import { ABORT_REASON, baseHeaders, Deliverer, outboundSend, USER_AGENT, type DelivererOptions } from "../src/deliverer.ts";
import { plannedDeliveries } from "../src/payload.ts";
import { maxAttempts } from "../src/schedule.ts";
import { DeliveryStore } from "../src/store/deliveries.ts";
import type { DeliveryRow } from "../src/store/rows.ts";
import { webhookDatabase } from "../src/store/sealing.ts";
import { SettingsStore } from "../src/store/settings.ts";

const MIGRATIONS = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "migrations");
const logger = createLogger({ level: "silent" });
const TENANT = newId("tenant");

let pg: FreshPostgres | undefined;
let db: SealingDatabase;
let store: SettingsStore;
let deliveries: DeliveryStore;
let secret: string;
let receiver: Receiver;
const running: Deliverer[] = [];
const outbound = createOutboundClient({ allowPrivate: true, timeoutMs: 5_000 });

beforeAll(async () => {
  pg = await maybeFreshPostgres();
  db = webhookDatabase(await openDatabase({ url: pg?.url, dataDir: "memory://" }));
  await migrate(db, "webhook", readMigrations(MIGRATIONS));
  store = new SettingsStore(db);
  deliveries = new DeliveryStore(db);
  secret = (
    await store.ensureSecrets(
      TENANT,
      { live: "whsec_bGl2ZWxpdmVsaXZlbGl2ZWxpdmVsaXZlbGl2ZWxpdmU=", test: "whsec_dGVzdHRlc3R0ZXN0dGVzdHRlc3R0ZXN0dGVzdHRlc3Q=" },
      new Date(),
    )
  ).test;
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
    queue: deliveries,
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
/** Plants deliveries due at `at` (now: the deliverer may take them at once). */
async function plant(n: number, url: string, delays: number[] = [100, 100], at = new Date()): Promise<string[]> {
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
    for (const e of events) await DeliveryStore.insertDeliveries(q, plannedDeliveries(e, url), maxAttempts(delays), baseHeaders, at, db.personalData);
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
    expect(new Webhook(secret).verify(req.body, req.headers as Record<string, string>)).toMatchObject({
      event: "verification.completed",
      test: true,
    });
    expect(r).toMatchObject({
      attempts: 1,
      max_attempts: 3,
      response_status: 200,
      response_body: "ok",
      error_message: null,
      next_retry_at: null,
    });
    expect(r.attempt_log).toEqual([{ attempt: 1, at: r.last_attempt_at!.toISOString(), status: 200, duration_ms: expect.any(Number) }]);
    expect(r.request_headers["x-service-signature"]).toBe(req.headers["x-service-signature"]);
  });

  it("retries a failing receiver on the schedule, then fails; a requeue allows one more attempt", async () => {
    receiver.answer(500);
    const [id] = await plant(1, receiver.url);
    deliverer();
    const failed = await until(id, (x) => x.status === "failed");
    expect(receiver.requests).toHaveLength(3);
    expect(new Set(receiver.requests.map((r) => r.headers["webhook-id"]))).toEqual(new Set([id]));
    expect(failed).toMatchObject({ attempts: 3, max_attempts: 3, response_status: 500, error_message: "HTTP 500", next_retry_at: null });
    expect(failed.attempt_log.map((a) => [a.attempt, a.status, a.error])).toEqual([
      [1, 500, "HTTP 500"],
      [2, 500, "HTTP 500"],
      [3, 500, "HTTP 500"],
      [3, undefined, undefined], // the attempt.exhausted entry (issue 19)
    ]);
    expect(failed.attempt_log[3]).toMatchObject({ event: "attempt.exhausted", reason: "all 3 attempts failed; the last: HTTP 500" });
    // the schedule counts from each attempt's start: no attempt began before the previous one's + 100 ms
    const starts = failed.attempt_log.slice(0, 3).map((a) => Date.parse(a.at));
    for (let i = 1; i < 3; i++) expect(starts[i] - starts[i - 1]).toBeGreaterThanOrEqual(100);

    receiver.answer(200);
    const scope = { tenantId: TENANT, env: "test" as const };
    expect(await deliveries.requeueFailed(scope, id, new Date())).toMatchObject({ status: "pending", max_attempts: 4 });
    expect(await deliveries.requeueFailed(scope, id, new Date())).toBeUndefined();
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
    // a lease long enough that a slow, loaded machine still checks inside it
    const first = deliverer({ leaseMs: 2_000, drainMs: 0 });
    await receiver.waitFor(1);
    await first.stop(); // cut off mid-send: nothing is recorded, the lease stays
    expect(await row(id)).toMatchObject({ status: "pending", attempts: 0, attempt_log: [] });
    deliverer({ leaseMs: 2_000 });
    await new Promise((res) => setTimeout(res, 300));
    expect(receiver.requests).toHaveLength(1); // the lease still holds it
    const r = await until(id, (x) => x.status === "delivered");
    expect(receiver.requests).toHaveLength(2);
    expect(receiver.requests[0].aborted).toBe(true);
    expect(receiver.requests[1].at - receiver.requests[0].at).toBeGreaterThanOrEqual(1_500);
    expect(receiver.requests[1].headers["webhook-id"]).toBe(id);
    expect(r).toMatchObject({ attempts: 1, response_status: 200 });
  });

  it("ignores the result of a sender whose lease was taken over", async () => {
    const [id] = await plant(1, receiver.url);
    const t0 = new Date(Date.now() + 60_000); // due, and far from any running deliverer's view
    const [a] = await deliveries.claimDue(t0, new Date(t0.getTime() + 1_000), "token-a", 1);
    expect(a).toMatchObject({ id, lease_token: "token-a", secret });
    expect(await deliveries.claimDue(t0, new Date(t0.getTime() + 1_000), "token-x", 10)).toEqual([]);
    const t1 = new Date(t0.getTime() + 1_000);
    const [b] = await deliveries.claimDue(t1, new Date(t1.getTime() + 1_000), "token-b", 1);
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
    await deliveries.recordResults([result("token-a", 201)]);
    expect(await row(id)).toMatchObject({ status: "pending", attempts: 0 });
    await deliveries.recordResults([result("token-b", 202)]);
    expect(await row(id)).toMatchObject({ status: "delivered", attempts: 1, response_status: 202 });
  });
});

describe("a receiver's abort and the endpoint's health (issue 19)", () => {
  const DAY = 24 * 3_600_000;
  const scope = { tenantId: TENANT, env: "test" as const };
  const endpoint = async () => (await store.endpoints(TENANT)).find((e) => e.environment === "test");
  afterEach(async () => {
    await db.query(`DELETE FROM webhook.endpoints`);
  });

  it("stops retrying when the receiver answers webhook-delivery: abort-message; the reason is in the detail", async () => {
    receiver.answer({ status: 410, headers: { "webhook-delivery": "abort-message" } });
    const [id] = await plant(1, receiver.url, [100, 100]);
    deliverer();
    const r = await until(id, (x) => x.status === "failed");
    await new Promise((res) => setTimeout(res, 300)); // a retry would have come by now
    expect(receiver.requests).toHaveLength(1);
    expect(r).toMatchObject({
      attempts: 1,
      max_attempts: 3,
      response_status: 410,
      error_message: `HTTP 410; ${ABORT_REASON}`,
      next_retry_at: null,
    });
    expect(r.attempt_log).toEqual([
      { attempt: 1, at: expect.any(String), status: 410, error: `HTTP 410; ${ABORT_REASON}`, duration_ms: expect.any(Number) },
      { event: "attempt.exhausted", attempt: 1, at: r.attempt_log[0].at, reason: ABORT_REASON, duration_ms: 0 },
    ]);
  });

  it("a 2xx that carries the abort header is still delivered", async () => {
    receiver.answer({ status: 200, headers: { "webhook-delivery": "abort-message" } });
    const [id] = await plant(1, receiver.url);
    deliverer();
    const r = await until(id, (x) => x.status !== "pending");
    expect(r).toMatchObject({ status: "delivered", error_message: null });
    expect(r.attempt_log).toHaveLength(1);
  });

  it("disables a tenant endpoint that failed every attempt for 5 days: pending deliveries fail, no new ones are planned", async () => {
    const clock = new ManualClock(Date.now() + 60_000); // ahead of the rows planted (due at real time)
    const secretUrl = `${receiver.url}?token=endpoint-secret-123`;
    await store.setEndpoint(TENANT, "test", secretUrl, clock.now());
    receiver.answer(500);
    const out = lineCollector();
    deliverer({ clock, logger: createLogger({ level: "info", destination: out }) });
    // day 0: the first failure starts the streak
    const [first] = await plant(1, secretUrl, []);
    await until(first, (x) => x.status === "failed");
    const t0 = (await row(first)).last_attempt_at!;
    expect(await endpoint()).toMatchObject({ failing_since: t0, disabled_at: null });
    // a minute short of 5 days: still on
    clock.advance(5 * DAY - 60_000);
    const [second] = await plant(1, secretUrl, []);
    await until(second, (x) => x.status === "failed");
    expect(await endpoint()).toMatchObject({ failing_since: t0, disabled_at: null });
    // a waiting retry of another delivery (due in an hour: planted so, or the running deliverer
    // could take it between a plant and a later change of its due time)
    const [waiting] = await plant(1, secretUrl, [3_600_000], new Date(clock.now().getTime() + 3_600_000));
    // 5 days and a minute: the next failure disables it
    clock.advance(2 * 60_000);
    const [third] = await plant(1, secretUrl, []);
    const last = await until(third, (x) => x.attempt_log.some((e) => e.event === "endpoint.disabled"));
    const ep = (await endpoint())!;
    expect(ep.disabled_at).toEqual(last.last_attempt_at);
    expect(ep.disabled_reason).toMatch(/^every attempt failed since .* \(5 days\)/);
    expect(last.attempt_log.map((e) => e.event)).toEqual([undefined, "attempt.exhausted", "endpoint.disabled"]);
    const w = await row(waiting);
    expect(w).toMatchObject({ status: "failed", error_message: ep.disabled_reason, next_retry_at: null });
    expect(w.attempt_log).toEqual([{ event: "endpoint.disabled", attempt: 0, at: ep.disabled_at!.toISOString(), reason: ep.disabled_reason, duration_ms: 0 }]);
    // operators are told, without the URL (it may carry a token)
    const warned = out.lines.filter((l) => l.includes("webhook endpoint disabled"));
    expect(warned).toHaveLength(1);
    expect(JSON.parse(warned[0])).toMatchObject({ level: "warn", tenant_id: TENANT, environment: "test", failing_since: t0.toISOString() });
    expect(out.lines.join("\n")).not.toContain("endpoint-secret-123");
    // the event consumer plans nothing for a disabled endpoint
    expect((await SettingsStore.endpointUrls(db, [{ tenantId: TENANT, env: "test" }])).get(`${TENANT}:test`)).toBeUndefined();
    // an operator turns it back on: the streak starts afresh
    expect(await store.enableEndpoint(TENANT, "test")).toMatchObject({ url: secretUrl, disabled_at: null, failing_since: null });
    expect((await SettingsStore.endpointUrls(db, [{ tenantId: TENANT, env: "test" }])).get(`${TENANT}:test`)).toBe(secretUrl);
    expect(await deliveries.requeueFailed(scope, first, clock.now())).toBeDefined();
  });

  it("one success restarts the streak: failures on both sides of it never add up to 5 days", async () => {
    const clock = new ManualClock(Date.now() + 60_000); // ahead of the rows planted (due at real time)
    await store.setEndpoint(TENANT, "test", receiver.url, clock.now());
    receiver.answer((_req, n) => (n === 2 ? 200 : 500));
    deliverer({ clock });
    const send = async () => {
      const [id] = await plant(1, receiver.url, []);
      return until(id, (x) => x.status !== "pending");
    };
    await send(); // fails on day 0
    clock.advance(DAY);
    expect(await send()).toMatchObject({ status: "delivered" }); // day 1
    expect(await endpoint()).toMatchObject({ failing_since: null });
    clock.advance(DAY);
    const d2 = await send(); // day 2: a new streak
    clock.advance(4 * DAY);
    await send(); // day 6: 4 days into the streak, 6 after the first failure
    expect(await endpoint()).toMatchObject({ failing_since: d2.last_attempt_at, disabled_at: null });
  });

  it("a request's callback URL is not an endpoint: its failures disable nothing", async () => {
    const clock = new ManualClock(Date.now() + 60_000); // ahead of the rows planted (due at real time)
    await store.setEndpoint(TENANT, "test", `${receiver.url}?endpoint`, clock.now());
    receiver.answer(500);
    deliverer({ clock });
    const [a] = await plant(1, receiver.url, []);
    await until(a, (x) => x.status === "failed");
    clock.advance(6 * 24 * 3_600_000);
    const [b] = await plant(1, receiver.url, []);
    expect((await until(b, (x) => x.status === "failed")).attempt_log.map((e) => e.event)).toEqual([undefined, "attempt.exhausted"]);
    expect(await endpoint()).toMatchObject({ failing_since: null, disabled_at: null });
  });
});
