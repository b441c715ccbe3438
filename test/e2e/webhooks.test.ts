// Webhooks through the public API and the admin CLI, received by real local HTTP receivers:
// signatures, retries, manual retry, the SSRF guard, the delivery endpoints, secret rotation and
// a crash of the webhook service mid-send.
import { execFile } from "node:child_process";
import { createHmac, timingSafeEqual } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { createLogger, parseConfig, systemClock } from "@icv/platform";
import { startWebhookService, type WebhookServiceOptions } from "../../services/webhook/src/start.ts";
import { expectError, waitFor } from "../support/expect-error.ts";
import { startReceiver, type Receiver, type ReceivedRequest } from "../support/receiver.ts";
import { api, startStack, type Stack } from "../support/stack.ts";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const BASE_ENV = { ALLOW_PRIVATE_TARGETS: "true", WEBHOOK_RETRY_DELAYS_MS: "200,200" };
let stack: Stack;
const receivers: Receiver[] = [];

beforeAll(async () => {
  stack = await startStack(BASE_ENV);
});
afterAll(async () => {
  await stack?.close();
  await Promise.all(receivers.map((r) => r.close()));
});

const receiver = async (...args: Parameters<typeof startReceiver>) => {
  const r = await startReceiver(...args);
  receivers.push(r);
  return r;
};

/** Runs the admin CLI the way an operator does (as `npm run admin` runs it), pointed at this stack's admin port. */
async function adminCli(...args: string[]): Promise<any> {
  const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", "scripts/admin.ts", ...args, "--json"], {
    cwd: ROOT,
    env: { ...process.env, ADMIN_URL: stack.gateway.adminUrl, ADMIN_TOKEN: stack.gateway.adminToken, LOG_LEVEL: "silent" },
    timeout: 60_000,
  });
  return JSON.parse(stdout);
}

interface Tenant {
  tenantId: string;
  testKey: string;
  liveKey: string;
  secret: string;
  c: ReturnType<typeof api>;
}

/** A new tenant whose test environment's webhook endpoint is `url` (set through the admin API). */
async function tenant(url: string | undefined, name = "Webhooks"): Promise<Tenant> {
  const r = await stack.admin.createTenant({ name }, { headers: stack.adminHeaders });
  const tenantId = r.tenant!.id;
  if (url) await stack.admin.setWebhookEndpoint({ tenantId, environment: Environment.TEST, url }, { headers: stack.adminHeaders });
  return { tenantId, testKey: r.testKey, liveKey: r.liveKey, secret: r.testWebhookSecret, c: api(stack.url, r.testKey) };
}

let phone = 10;
/** create + test-verify: answers the verification id. */
async function verify(t: Tenant, externalUserId = "user-1"): Promise<string> {
  const v = await t.c.post("/api/v1/verifications", {
    type: "phone",
    channel: "telegram",
    identifier: `+370691${String(phone++).padStart(5, "0")}`,
    external_user_id: externalUserId,
  });
  expect(v.status).toBe(201);
  expect((await t.c.post(`/api/v1/verifications/${v.body.id}/test-verify`)).status).toBe(200);
  return v.body.id;
}

/** The tenant's deliveries once `pred` holds for the list (fails after timeoutMs). */
async function deliveriesWhen(t: Tenant, pred: (data: any[]) => boolean, timeoutMs = 10_000, query = ""): Promise<any[]> {
  const data = await waitFor(async () => {
    const r = await t.c.get(`/api/v1/webhook-deliveries${query}`);
    expect(r.status).toBe(200);
    return pred(r.body.data) ? r.body.data : undefined;
  }, timeoutMs);
  if (!data) throw new Error(`deliveries never matched: ${JSON.stringify((await t.c.get(`/api/v1/webhook-deliveries${query}`)).body)}`);
  return data;
}

const xServiceSignatureOk = (req: ReceivedRequest, secret: string, header = "x-service-signature") => {
  const got = Buffer.from(String(req.headers[header] ?? ""));
  const want = Buffer.from(createHmac("sha256", secret).update(req.body, "utf8").digest("hex"));
  return got.length === want.length && timingSafeEqual(got, want);
};

/** Replaces the running webhook service with one on the same port and database (a restart). */
async function restartWebhook(env: Record<string, string> = {}, opts: WebhookServiceOptions = {}): Promise<void> {
  const port = new URL(stack.services.webhook.url).port;
  await stack.services.webhook.close();
  const config = parseConfig({ ...stack.env, ...BASE_ENV, WEBHOOK_GRPC_PORT: port, ...env });
  stack.services.webhook = await startWebhookService(config, createLogger({ level: stack.env.LOG_LEVEL }), systemClock, opts);
}

describe("a receiver answering 200", () => {
  it("gets one correctly signed verification.completed per verified verification, with test: true", async () => {
    const rx = await receiver(200);
    const t = await tenant(rx.url);
    const id = await verify(t, "user-42");
    const [req] = await rx.waitFor(1);

    expect(req.method).toBe("POST");
    expect(req.headers["content-type"]).toBe("application/json");
    expect(req.headers["user-agent"]).toMatch(/^ICV-Webhooks\//);
    expect(xServiceSignatureOk(req, t.secret)).toBe(true);
    expect(req.headers).not.toHaveProperty("x-service-signature-previous");
    const body = new Webhook(t.secret).verify(req.body, req.headers as Record<string, string>) as any;
    expect(body).toEqual({
      id: expect.stringMatching(/^evt_/),
      event: "verification.completed",
      test: true,
      created_at: expect.any(String),
      verification_id: id,
      type: "phone",
      channel: "telegram",
      status: "verified",
      verified_at: expect.any(String),
      external_user_id: "user-42",
      client_metadata: null,
      proof: { token: expect.any(String), expires_at: expect.any(String), identifier_salt: expect.stringMatching(/^[0-9a-f]{32}$/) },
    });
    expect(new Date(body.created_at).toISOString()).toBe(body.created_at);

    // the delivery record
    const [d] = await deliveriesWhen(t, (data) => data[0]?.status === "delivered");
    expect(d).toEqual({
      id: req.headers["webhook-id"],
      verification_request_id: null,
      event_type: "verification.completed",
      url: rx.url,
      status: "delivered",
      attempts: 1,
      max_attempts: 3,
      response_status: 200,
      error_message: null,
      last_attempt_at: expect.any(String),
      next_retry_at: null,
      delivered_at: expect.any(String),
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(d.delivered_at).toBe(d.last_attempt_at);
    const detail = await t.c.get(`/api/v1/webhook-deliveries/${d.id}`);
    expect(detail.status).toBe(200);
    expect(detail.body).toMatchObject({ ...d, request_payload: body, response_body: "ok", error_message: null, next_retry_at: null });
    expect(detail.body.request_headers).toMatchObject({
      "webhook-id": d.id,
      "x-service-signature": req.headers["x-service-signature"],
      "content-type": "application/json",
    });
    expect(detail.body.attempt_log).toEqual([{ attempt: 1, at: detail.body.last_attempt_at, status: 200, duration_ms: expect.any(Number) }]);

    // status_changed events are not webhooks: nothing else arrives
    await new Promise((r) => setTimeout(r, 300));
    expect(rx.requests).toHaveLength(1);
  });
});

describe("a receiver answering 500", () => {
  it("sees the retries; the delivery ends failed; a manual retry then delivers; retrying it again is 409", async () => {
    const rx = await receiver(500);
    const t = await tenant(rx.url);
    await verify(t);
    await rx.waitFor(3);
    const [d] = await deliveriesWhen(t, (data) => data[0]?.status === "failed");
    expect(d).toMatchObject({ status: "failed", attempts: 3, max_attempts: 3, response_status: 500 });
    const ids = new Set(rx.requests.map((r) => r.headers["webhook-id"]));
    expect(ids).toEqual(new Set([d.id]));
    for (let i = 1; i < 3; i++) expect(rx.requests[i].at - rx.requests[i - 1].at).toBeGreaterThanOrEqual(150); // 200 ms ± 20 %
    expect(rx.requests.every((r) => xServiceSignatureOk(r, t.secret))).toBe(true);
    const failed = (await t.c.get(`/api/v1/webhook-deliveries/${d.id}`)).body;
    expect(failed).toMatchObject({ error_message: "HTTP 500", response_body: "no", next_retry_at: null });
    expect(failed.attempt_log.map((a: any) => [a.attempt, a.status, a.error])).toEqual([
      [1, 500, "HTTP 500"],
      [2, 500, "HTTP 500"],
      [3, 500, "HTTP 500"],
      [3, undefined, undefined],
    ]);
    // issue 19: the delivery log says why it ended
    expect(failed.attempt_log[3]).toEqual({
      event: "attempt.exhausted",
      attempt: 3,
      at: failed.last_attempt_at,
      reason: "all 3 attempts failed; the last: HTTP 500",
      duration_ms: 0,
    });

    rx.answer(200);
    const retried = await t.c.post(`/api/v1/webhook-deliveries/${d.id}/retry`);
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ success: true, delivery: { id: d.id, max_attempts: 4 } });
    expect(["pending", "delivered"]).toContain(retried.body.delivery.status);
    await rx.waitFor(4);
    const [done] = await deliveriesWhen(t, (data) => data[0]?.status === "delivered");
    expect(done).toMatchObject({ attempts: 4, max_attempts: 4, response_status: 200 });
    expect(rx.requests).toHaveLength(4);

    expectError(await t.c.post(`/api/v1/webhook-deliveries/${d.id}/retry`), 409, "invalid_state");
  });
});

describe("the delivery endpoints", () => {
  let t: Tenant;
  beforeAll(async () => {
    const rx = await receiver((req: ReceivedRequest) => (JSON.parse(req.body).external_user_id === "fail-me" ? 503 : 200));
    t = await tenant(rx.url);
    await verify(t, "ok-1");
    await verify(t, "ok-2");
    await verify(t, "fail-me");
    await deliveriesWhen(t, (data) => data.length === 3 && data.every((d) => d.status !== "pending"));
  });

  it("filter by status, event_type and verification_request_id", async () => {
    const failed = await t.c.get("/api/v1/webhook-deliveries?status=failed");
    expect(failed.body.data).toHaveLength(1);
    expect(failed.body.data[0]).toMatchObject({ status: "failed", response_status: 503 });
    expect((await t.c.get("/api/v1/webhook-deliveries?status=delivered")).body.data).toHaveLength(2);
    expect((await t.c.get("/api/v1/webhook-deliveries?event_type=verification.completed")).body.pagination.total).toBe(3);
    expect((await t.c.get("/api/v1/webhook-deliveries?event_type=verification_request.completed")).body.data).toEqual([]);
    expect((await t.c.get("/api/v1/webhook-deliveries?verification_request_id=vreq_01J00000000000000000000000")).body.data).toEqual([]);
    expectError(await t.c.get("/api/v1/webhook-deliveries?status=lost"), 400, "validation_error");
  });

  it("paginate newest first", async () => {
    const p1 = await t.c.get("/api/v1/webhook-deliveries?limit=2");
    expect(p1.body.pagination).toEqual({ page: 1, limit: 2, total: 3, pages: 2, hasMore: true, has_more: true, total_pages: 2 });
    expect(p1.body.deliveries).toEqual(p1.body.data);
    const p2 = await t.c.get("/api/v1/webhook-deliveries?limit=2&page=2");
    expect(p2.body.pagination).toEqual({ page: 2, limit: 2, total: 3, pages: 2, hasMore: false, has_more: false, total_pages: 2 });
    const all = [...p1.body.data, ...p2.body.data];
    expect(new Set(all.map((d) => d.id)).size).toBe(3);
    const created = all.map((d) => d.created_at);
    expect([...created].sort().reverse()).toEqual(created);
    expectError(await t.c.get("/api/v1/webhook-deliveries?limit=101"), 400, "validation_error");
    expectError(await t.c.get("/api/v1/webhook-deliveries?page=0"), 400, "validation_error");
  });

  it("count by status with a two-decimal success rate", async () => {
    const s = await t.c.get("/api/v1/webhook-deliveries/stats");
    expect(s.status).toBe(200);
    expect(s.body).toEqual({
      total: 3,
      delivered: 2,
      failed: 1,
      pending: 0,
      success_rate: 66.67,
      by_status: { pending: 0, delivered: 2, failed: 1 },
      delivery_rate: "66.67",
      recent_failures_24h: 1,
    });
    const empty = await tenant(undefined);
    expect((await empty.c.get("/api/v1/webhook-deliveries/stats")).body).toEqual({
      total: 0,
      delivered: 0,
      failed: 0,
      pending: 0,
      success_rate: 0,
      by_status: { pending: 0, delivered: 0, failed: 0 },
      delivery_rate: "0.00",
      recent_failures_24h: 0,
    });
  });

  it("answer 404 for another tenant's or environment's delivery", async () => {
    const [d] = (await t.c.get("/api/v1/webhook-deliveries?status=failed")).body.data;
    const other = await tenant(undefined, "Other");
    expectError(await other.c.get(`/api/v1/webhook-deliveries/${d.id}`), 404, "not_found");
    expectError(await other.c.post(`/api/v1/webhook-deliveries/${d.id}/retry`), 404, "not_found");
    expect((await other.c.get("/api/v1/webhook-deliveries")).body.data).toEqual([]);
    const live = api(stack.url, t.liveKey);
    expectError(await live.get(`/api/v1/webhook-deliveries/${d.id}`), 404, "not_found");
    expectError(await live.post(`/api/v1/webhook-deliveries/${d.id}/retry`), 404, "not_found");
    expectError(await t.c.get("/api/v1/webhook-deliveries/whd_01J00000000000000000000000"), 404, "not_found");
    expectError(await t.c.get("/api/v1/webhook-deliveries/nonsense"), 400, "validation_error"); // not an id: refused before any lookup
    expectError(await api(stack.url).get("/api/v1/webhook-deliveries"), 401, "unauthorized");
  });
});

describe("the admin CLI", () => {
  it("sets, shows and removes the endpoint, and rotates the secret: both secrets sign for 24 h", async () => {
    const rx = await receiver(200);
    const t = await tenant(undefined, "CLI");
    const set = await adminCli("webhook", "set", "--tenant", t.tenantId, "--env", "test", "--url", rx.url);
    expect(set).toMatchObject({ environment: "test", url: rx.url, secret: t.secret, previous_secret: null });
    const shown = await adminCli("webhook", "show", "--tenant", t.tenantId);
    expect(shown).toMatchObject({
      tenant_id: t.tenantId,
      live: { environment: "live", url: null },
      test: { environment: "test", url: rx.url, secret: t.secret },
    });

    const rotated = await adminCli("webhook-secret", "rotate", "--tenant", t.tenantId, "--env", "test");
    expect(rotated.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(rotated.secret).not.toBe(t.secret);
    expect(rotated.previous_secret).toBe(t.secret);
    const overlapEnds = Date.parse(rotated.previous_secret_expires_at) - Date.now();
    expect(overlapEnds).toBeGreaterThan(24 * 3600_000 - 120_000);
    expect(overlapEnds).toBeLessThanOrEqual(24 * 3600_000);

    await verify(t);
    const [req] = await rx.waitFor(1);
    expect(xServiceSignatureOk(req, rotated.secret)).toBe(true);
    expect(xServiceSignatureOk(req, t.secret, "x-service-signature-previous")).toBe(true);
    expect(String(req.headers["webhook-signature"]).split(" ")).toHaveLength(2);
    expect(new Webhook(rotated.secret).verify(req.body, req.headers as Record<string, string>)).toBeTruthy();
    expect(new Webhook(t.secret).verify(req.body, req.headers as Record<string, string>)).toBeTruthy();

    expect(await adminCli("webhook", "remove", "--tenant", t.tenantId, "--env", "test")).toEqual({ removed_url: rx.url });
    await verify(t);
    await new Promise((r) => setTimeout(r, 500));
    expect(rx.requests).toHaveLength(1);
  }, 120_000);

  it("refuses a URL that is not http(s) or carries credentials, and an unknown tenant", async () => {
    const t = await tenant(undefined, "CLI bad");
    const call = (url: string) => stack.admin.setWebhookEndpoint({ tenantId: t.tenantId, environment: Environment.TEST, url }, { headers: stack.adminHeaders });
    await expect(call("ftp://example.com/hook")).rejects.toThrow(/only http and https/);
    await expect(call("https://user:pw@example.com/hook")).rejects.toThrow(/credentials/);
    await expect(call(`https://example.com/${"a".repeat(2100)}`)).rejects.toThrow(/longer than 2048/);
    await expect(
      stack.admin.setWebhookEndpoint(
        { tenantId: "ten_01J00000000000000000000000", environment: Environment.TEST, url: "https://example.com/" },
        { headers: stack.adminHeaders },
      ),
    ).rejects.toThrow(/tenant not found/);
  });
});

describe("the SSRF guard", () => {
  it("refuses a private webhook URL when it is set (admin API), unless ALLOW_PRIVATE_TARGETS=true", async () => {
    const t = await tenant(undefined, "SSRF at set");
    const call = (url: string) => stack.admin.setWebhookEndpoint({ tenantId: t.tenantId, environment: Environment.TEST, url }, { headers: stack.adminHeaders });
    await restartWebhook({ ALLOW_PRIVATE_TARGETS: "false" });
    try {
      await expect(call("http://127.0.0.1:9/hook")).rejects.toThrow(
        /invalid webhook URL: refused: 127.0.0.1 is a loopback address; loopback and private addresses are allowed only with ALLOW_PRIVATE_TARGETS=true/,
      );
      await expect(call("http://[::127.0.0.1]/hook")).rejects.toThrow(/refused: ::7f00:1 is an IPv4-compatible address/);
      await expect(call("http://169.254.169.254/latest/")).rejects.toThrow(/refused: 169.254.169.254 is a cloud metadata address/);
      await expect(call("http://[64:ff9b::a00:1]/")).rejects.toThrow(/refused: 64:ff9b::a00:1 is a NAT64 address/);
      // the admin CLI says why and exits 1
      const cli = await adminCli("webhook", "set", "--tenant", t.tenantId, "--env", "test", "--url", "http://[::ffff:10.0.0.1]/hook").then(
        () => undefined,
        (e: { code?: number; stderr?: string }) => e,
      );
      expect(cli?.code).toBe(1);
      expect(cli?.stderr).toContain(
        "refused: ::ffff:a00:1 is a private address; loopback and private addresses are allowed only with ALLOW_PRIVATE_TARGETS=true",
      );
      expect((await stack.admin.getWebhookSettings({ tenantId: t.tenantId }, { headers: stack.adminHeaders })).test?.url).toBe("");
    } finally {
      await restartWebhook({ ALLOW_PRIVATE_TARGETS: "true" });
    }
    expect((await call("http://127.0.0.1:9/hook")).webhooks?.url).toBe("http://127.0.0.1:9/hook");
  });

  it("refuses 127.0.0.1 unless ALLOW_PRIVATE_TARGETS=true, as a failed delivery with the reason", async () => {
    const rx = await receiver(200);
    const t = await tenant(rx.url);
    await restartWebhook({ ALLOW_PRIVATE_TARGETS: "false" });
    try {
      await verify(t);
      const [d] = await deliveriesWhen(t, (data) => data[0]?.status === "failed");
      expect(d).toMatchObject({ attempts: 1, response_status: null });
      const detail = (await t.c.get(`/api/v1/webhook-deliveries/${d.id}`)).body;
      expect(detail.error_message).toBe("refused: 127.0.0.1 is a loopback address");
      expect(detail.attempt_log).toEqual([
        { attempt: 1, at: expect.any(String), error: "refused: 127.0.0.1 is a loopback address", duration_ms: expect.any(Number) },
        {
          event: "attempt.exhausted",
          attempt: 1,
          at: detail.last_attempt_at,
          reason: "no retry can succeed: refused: 127.0.0.1 is a loopback address",
          duration_ms: 0,
        },
      ]);
      expect(rx.requests).toHaveLength(0);
    } finally {
      await restartWebhook({ ALLOW_PRIVATE_TARGETS: "true" });
    }
    const [d] = (await t.c.get("/api/v1/webhook-deliveries")).body.data;
    expect((await t.c.post(`/api/v1/webhook-deliveries/${d.id}/retry`)).status).toBe(200);
    await rx.waitFor(1);
    await deliveriesWhen(t, (data) => data[0]?.status === "delivered");
  });
});

describe("a crash of the webhook service mid-send", () => {
  it("leaves the delivery leased; after a restart on the same database it is sent again and delivered", async () => {
    const lease = { leaseMs: 1_500 };
    await restartWebhook({ SHUTDOWN_TIMEOUT_MS: "100" }, lease);
    const rx = await receiver((_req, n) => (n === 1 ? "hold" : 200));
    const t = await tenant(rx.url);
    await verify(t);
    const [first] = await rx.waitFor(1);
    await restartWebhook({}, lease); // the held attempt is cut off and never recorded
    expect(await waitFor(async () => first.aborted, 2_000)).toBe(true);
    const [pending] = (await t.c.get("/api/v1/webhook-deliveries")).body.data;
    expect(pending).toMatchObject({ status: "pending", attempts: 0 });

    const [d] = await deliveriesWhen(t, (data) => data[0]?.status === "delivered");
    expect(rx.requests).toHaveLength(2);
    expect(rx.requests[1].headers["webhook-id"]).toBe(d.id);
    expect(rx.requests[1].body).toBe(first.body);
    expect(d).toMatchObject({ attempts: 1, response_status: 200 });
  });
});
