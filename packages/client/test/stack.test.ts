// @icv/client against the real stack (every service in this process, as `npm start` runs them):
// create, wait for completion by the event stream and by polling when the stream is refused,
// complete in test mode, validate online, an automatic Idempotency-Key the service honours, and
// a webhook the service really delivered to a local receiver, checked with verifyWebhook.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { waitFor } from "../../../test/support/expect-error.ts";
import { startReceiver, type Receiver } from "../../../test/support/receiver.ts";
import { useStack } from "../../../test/support/use-stack.ts";
import { createIcvClient, IcvApiError, verifyWebhook, WaitTimeoutError, type FetchLike } from "../src/index.ts";

let rx: Receiver;
const env: Record<string, string> = {};
beforeAll(async () => {
  rx = await startReceiver(200);
  // one stream per tenant at once: a second is answered 429 too_many_connections (the polling fallback)
  Object.assign(env, { ALLOW_PRIVATE_TARGETS: "true", WEBHOOK_RETRY_DELAYS_MS: "200,200", SSE_MAX_CONNECTIONS_PER_TENANT: "1" });
});
afterAll(() => rx?.close());

const stack = useStack(() => env);

/** A tenant with its keys and webhook secrets; its test webhooks go to the receiver. */
async function tenant(webhook = false) {
  const r = await stack.admin.createTenant({ name: "Client" }, { headers: stack.adminHeaders });
  if (webhook) await stack.admin.setWebhookEndpoint({ tenantId: r.tenant!.id, environment: Environment.TEST, url: rx.url }, { headers: stack.adminHeaders });
  return r;
}

/** A client whose every request (method, path, status, Idempotency-Key) is noted in `log`. */
function recorded(apiKey: string) {
  const log: { method: string; path: string; status: number; key: string | null }[] = [];
  const rec: FetchLike = async (req, init) => {
    const res = await fetch(req, init);
    log.push({ method: req.method, path: new URL(req.url).pathname, status: res.status, key: req.headers.get("idempotency-key") });
    return res;
  };
  return { icv: createIcvClient({ baseUrl: stack.url, apiKey, fetch: rec }), log };
}

let n = 0;
const phone = () => `+3706930${String(n++).padStart(4, "0")}`;

describe("create, complete, validate", () => {
  it("creates with a typed call, completes in test mode, and validate answers valid with test_mode for the test key only", async () => {
    const t = await tenant();
    const { icv, log } = recorded(t.testKey);
    const created = await icv.POST("/api/v1/verifications", { body: { type: "phone", channel: "telegram", identifier: phone(), external_user_id: "user-30" } });
    expect(created.response.status).toBe(201);
    expect(created.data).toMatchObject({ status: "pending", type: "phone", test_mode: true });
    const id = created.data!.id;
    expect(log[0]).toMatchObject({ method: "POST", status: 201, key: expect.stringMatching(/^[0-9a-f-]{36}$/) });

    const done = await icv.POST("/api/v1/verifications/{id}/test-verify", { params: { path: { id } } });
    expect(done.data).toMatchObject({ status: "verified", proof_token: expect.any(String) });
    const token = done.data!.proof_token;

    const valid = await icv.POST("/api/v1/proofs/validate", { body: { proof_token: token } });
    expect(valid.data).toMatchObject({ valid: true, verification: { id, test_mode: true, method: "test" } });
    const live = createIcvClient({ baseUrl: stack.url, apiKey: t.liveKey });
    expect((await live.POST("/api/v1/proofs/validate", { body: { proof_token: token } })).data).toMatchObject({ valid: false, reason: "test_proof" });

    const read = await icv.GET("/api/v1/verifications/{id}", { params: { path: { id } } });
    expect(read.data).toMatchObject({ id, status: "verified", external_user_id: "user-30", proof: { token } });
  });

  it("answers the service's errors as typed error bodies, and a repeated Idempotency-Key replays the first answer", async () => {
    const t = await tenant();
    const icv = createIcvClient({ baseUrl: stack.url, apiKey: t.testKey });
    const bad = await icv.POST("/api/v1/verifications", { body: { type: "phone", channel: "telegram", identifier: "not a number" } });
    expect(bad.response.status).toBe(400);
    expect(bad.error).toMatchObject({ error: { code: "invalid_identifier", request_id: expect.any(String) } });

    const body = { type: "email" as const, channel: "email", identifier: "once@example.com" };
    const first = await icv.POST("/api/v1/verifications", { body, headers: { "Idempotency-Key": "client-30-once" } });
    const again = await icv.POST("/api/v1/verifications", { body, headers: { "Idempotency-Key": "client-30-once" } });
    expect(again.data!.id).toBe(first.data!.id);
    expect(again.response.headers.get("idempotent-replayed")).toBe("true");
    // without a key of the caller's, two calls are two verifications
    const other = await icv.POST("/api/v1/verifications", { body });
    expect(other.data!.id).not.toBe(first.data!.id);
  });
});

describe("waitForCompletion", () => {
  it("follows the event stream: resolves with the verified verification once test-verify completes it, without polling", async () => {
    const t = await tenant();
    const { icv, log } = recorded(t.testKey);
    const id = (await icv.POST("/api/v1/verifications", { body: { type: "phone", channel: "telegram", identifier: phone() } })).data!.id;
    const waiting = icv.waitForCompletion(id, { timeoutMs: 15_000, pollIntervalMs: 100 });
    expect(await waitFor(async () => log.some((l) => l.path.endsWith("/events") && l.status === 200), 5000)).toBe(true);
    await new Promise((r) => setTimeout(r, 300));
    await icv.POST("/api/v1/verifications/{id}/test-verify", { params: { path: { id } } });
    const v = await waiting;
    expect(v).toMatchObject({ id, status: "verified", proof: { token: expect.any(String) } });
    // one stream, then the one read that answers the verification: no polls while it was pending
    expect(log.filter((l) => l.method === "GET").map((l) => `${l.path} ${l.status}`)).toEqual([
      `/api/v1/verifications/${id}/events 200`,
      `/api/v1/verifications/${id} 200`,
    ]);
  });

  it("falls back to polling when the stream is refused (429 too_many_connections), and resolves when the verification completes", async () => {
    const t = await tenant();
    const { icv, log } = recorded(t.testKey);
    const id = (await icv.POST("/api/v1/verifications", { body: { type: "phone", channel: "telegram", identifier: phone() } })).data!.id;
    // another stream of this tenant holds its only slot
    const holder = new AbortController();
    const held = await fetch(`${stack.url}/api/v1/verifications/${id}/events`, { headers: { authorization: `Bearer ${t.testKey}` }, signal: holder.signal });
    expect(held.status).toBe(200);
    try {
      const waiting = icv.waitForCompletion(id, { timeoutMs: 15_000, pollIntervalMs: 150 });
      expect(await waitFor(async () => log.filter((l) => l.path === `/api/v1/verifications/${id}`).length >= 2, 5000)).toBe(true);
      await icv.POST("/api/v1/verifications/{id}/test-verify", { params: { path: { id } } });
      expect(await waiting).toMatchObject({ id, status: "verified" });
      expect(log.find((l) => l.path.endsWith("/events"))).toMatchObject({ status: 429 });
      expect(log.filter((l) => l.path === `/api/v1/verifications/${id}`).length).toBeGreaterThanOrEqual(3);
    } finally {
      holder.abort();
    }
  });

  it("answers at once for a verification already done, rejects another tenant's id as not_found, and times out as asked", async () => {
    const [a, b] = await Promise.all([tenant(), tenant()]);
    const icv = createIcvClient({ baseUrl: stack.url, apiKey: a.testKey });
    const id = (await icv.POST("/api/v1/verifications", { body: { type: "phone", channel: "telegram", identifier: phone() } })).data!.id;
    const pending = icv.waitForCompletion(id, { timeoutMs: 500 });
    await expect(pending).rejects.toBeInstanceOf(WaitTimeoutError);
    await expect(icv.waitForCompletion(id, { transport: "poll", timeoutMs: 400, pollIntervalMs: 100 })).rejects.toThrow(/still pending after 400 ms/);

    const other = createIcvClient({ baseUrl: stack.url, apiKey: b.testKey });
    const e = await other.waitForCompletion(id, { timeoutMs: 5000 }).catch((x) => x);
    expect(e).toBeInstanceOf(IcvApiError);
    expect(e).toMatchObject({ status: 404, code: "not_found" });
    const liveSelf = createIcvClient({ baseUrl: stack.url, apiKey: a.liveKey });
    await expect(liveSelf.waitForCompletion(id, { transport: "poll", timeoutMs: 5000 })).rejects.toMatchObject({ status: 404 });

    await icv.POST("/api/v1/verifications/{id}/test-verify", { params: { path: { id } } });
    const started = Date.now();
    // the stream's first event says so: no poll interval (a minute here) is waited
    expect(await icv.waitForCompletion(id, { pollIntervalMs: 60_000 })).toMatchObject({ status: "verified" });
    expect(Date.now() - started).toBeLessThan(5000);
  });
});

describe("a delivered webhook", () => {
  it("verifies with the tenant's test webhook secret, both schemes; a tampered or replayed copy is refused", async () => {
    const t = await tenant(true);
    const icv = createIcvClient({ baseUrl: stack.url, apiKey: t.testKey });
    const id = (await icv.POST("/api/v1/verifications", { body: { type: "phone", channel: "telegram", identifier: phone() } })).data!.id;
    await icv.POST("/api/v1/verifications/{id}/test-verify", { params: { path: { id } } });
    await waitFor(async () => rx.requests.some((r) => r.body.includes(id)), 10_000);
    const delivered = rx.requests.find((r) => r.body.includes(id))!;

    const event = verifyWebhook(delivered.body, delivered.headers, { secret: t.testWebhookSecret });
    expect(event).toMatchObject({ event: "verification.completed", verification_id: id, status: "verified", test: true });
    const { "webhook-signature": _s, ...hexOnly } = delivered.headers;
    expect(verifyWebhook(delivered.body, hexOnly, { secret: t.testWebhookSecret, schemes: ["hmac-hex"] })).toEqual(event);

    expect(() => verifyWebhook(delivered.body, delivered.headers, { secret: t.liveWebhookSecret })).toThrow(/no valid signature/);
    expect(() => verifyWebhook(delivered.body.replace('"verified"', '"revoked"'), delivered.headers, { secret: t.testWebhookSecret })).toThrow(
      /no valid signature/,
    );
    const later = () => Date.now() + 10 * 60_000;
    expect(() => verifyWebhook(delivered.body, delivered.headers, { secret: t.testWebhookSecret, now: later })).toThrow(/tolerance window/);
  });
});
