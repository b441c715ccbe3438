// The HTTP error cases as a tenant sees them: status, error.code, error.request_id equal to the
// X-Request-Id header, JSON and never an HTML page or a stack trace.
//
// The stack runs with a limit of 5 requests per minute per key, so every test takes fresh keys
// (a new tenant) and stays within 5 keyed requests per key; the rate-limit test uses that limit.
import { describe, expect, it } from "vitest";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { api } from "../support/stack.ts";
import { useStack } from "../support/use-stack.ts";
import { expectError } from "../support/expect-error.ts";

const LIMIT = 5;
const stack = useStack({ RATE_LIMIT_PER_MINUTE: String(LIMIT) });

/** A new tenant: its keys and a client for each. */
async function fresh() {
  const t = await stack.tenant(`errors ${Math.random().toString(36).slice(2, 8)}`);
  return { ...t, test: api(stack.url, t.testKey), live: api(stack.url, t.liveKey) };
}

/** Another key of the tenant's environment (its own rate-limit budget). */
async function extraKey(tenantId: string, env: "live" | "test") {
  const r = await stack.admin.createApiKey({ tenantId, environment: env === "live" ? Environment.LIVE : Environment.TEST }, { headers: stack.adminHeaders });
  return { keyId: r.keyId, key: r.key, c: api(stack.url, r.key) };
}

const phone = { type: "phone", channel: "telegram", identifier: "+37069199199" };
const UNKNOWN_ID = "ver_01KGQ3Z3Y8R5F6G7H8J9K0M1N2";

describe("401 unauthorized", () => {
  const expect401 = (res: Awaited<ReturnType<ReturnType<typeof api>["get"]>>) => {
    expectError(res, 401, "unauthorized");
    expect(res.headers.get("www-authenticate") ?? "").toMatch(/^Bearer\b/);
  };

  it("for a missing key, a malformed key, a wrong scheme and an unknown well-formed key", async () => {
    expect401(await api(stack.url).get("/api/v1/verifications"));
    expect401(await api(stack.url).post("/api/v1/verifications", phone));
    expect401(await api(stack.url, "not-a-key").get("/api/v1/verifications"));
    expect401(await api(stack.url, "pk_test_short").get("/api/v1/verifications"));
    expect401(await api(stack.url).get("/api/v1/verifications", { authorization: "Basic dXNlcjpwYXNz" }));
    expect401(await api(stack.url, `pk_test_${"A".repeat(43)}`).get("/api/v1/verifications"));
    expect401(await api(stack.url, `pk_live_${"0aZ".repeat(14)}b`).get("/api/v1/verifications"));
  });

  it("for a key that worked until it was revoked", async () => {
    const t = await fresh();
    const k = await extraKey(t.tenantId, "test");
    expect((await k.c.get("/api/v1/verifications")).status).toBe(200);
    await stack.admin.revokeApiKey({ keyId: k.keyId }, { headers: stack.adminHeaders });
    expect401(await k.c.get("/api/v1/verifications"));
    expect401(await k.c.post("/api/v1/verifications", phone));
    // the tenant's other keys are untouched
    expect((await t.test.get("/api/v1/verifications")).status).toBe(200);
  });
});

describe("403, 404 and 409", () => {
  it("403 test_mode_required when a live key calls test-verify", async () => {
    const t = await fresh();
    const wallet = privateKeyToAccount(generatePrivateKey());
    const v = await t.live.post("/api/v1/verifications", { type: "wallet", channel: "ethereum", identifier: wallet.address });
    expect(v.status).toBe(201);
    expectError(await t.live.post(`/api/v1/verifications/${v.body.id}/test-verify`), 403, "test_mode_required");
    const after = await t.live.get(`/api/v1/verifications/${v.body.id}`);
    expect(after.body.status).toBe("pending");
  });

  it("404 not_found for an unknown route and an unknown id", async () => {
    const t = await fresh();
    expectError(await api(stack.url).get("/api/v1/no-such-thing"), 404, "not_found");
    expectError(await t.test.get("/api/v1/no-such-thing"), 404, "not_found");
    expectError(await api(stack.url).post("/api/v2/verifications", phone), 404, "not_found");
    expectError(await t.test.get(`/api/v1/verifications/${UNKNOWN_ID}`), 404, "not_found");
    expectError(await t.test.get(`/api/v1/proofs/${UNKNOWN_ID}/status`), 404, "not_found");
  });

  it("400 validation_error (not a 500) for a path with broken percent-encoding", async () => {
    const t = await fresh();
    expectError(await t.test.get("/api/v1/verifications/%E0%A4%A"), 400, "validation_error");
  });

  it("409 invalid_state for a submit on a verified verification and a revoke of a pending one", async () => {
    const t = await fresh();
    const v = await t.test.post("/api/v1/verifications", phone);
    expect(v.status).toBe(201);
    expectError(await t.test.post(`/api/v1/proofs/${v.body.id}/revoke`, { reason: "fraud" }), 409, "invalid_state");
    expect((await t.test.post(`/api/v1/verifications/${v.body.id}/test-verify`)).status).toBe(200);
    expectError(await t.test.post(`/api/v1/verifications/${v.body.id}/submit`, { challenge_code: v.body.challenge.code }), 409, "invalid_state");
    const after = await t.test.get(`/api/v1/verifications/${v.body.id}`);
    expect(after.body).toMatchObject({ status: "verified", attempts: 0 });
  });
});

describe("bodies", () => {
  it("413 payload_too_large for a body over 10 KB", async () => {
    const t = await fresh();
    const big = { ...phone, client_metadata: { note: "x".repeat(11 * 1024) } };
    expectError(await t.test.post("/api/v1/verifications", big), 413, "payload_too_large");
    // just under the limit is parsed (and then judged on its content: metadata over 4 KB)
    const under = { ...phone, client_metadata: { note: "x".repeat(9 * 1024) } };
    expectError(await t.test.post("/api/v1/verifications", under), 400, "validation_error");
  });

  it("415 unsupported_media_type for a text/plain body", async () => {
    const t = await fresh();
    const res = await t.test.post("/api/v1/verifications", JSON.stringify(phone), { "content-type": "text/plain" });
    expectError(res, 415, "unsupported_media_type");
    const form = await t.test.post("/api/v1/verifications", "type=phone&channel=telegram", {
      "content-type": "application/x-www-form-urlencoded",
    });
    expectError(form, 415, "unsupported_media_type");
    const list = await t.test.get("/api/v1/verifications");
    expect(list.body.pagination.total).toBe(0);
  });

  it("400 validation_error with details for unknown fields, a bad enum, limit=101 and page=0", async () => {
    const t = await fresh();
    const unknown = expectError(await t.test.post("/api/v1/verifications", { ...phone, colour: "blue" }), 400, "validation_error");
    expect(unknown.details).toEqual(
      expect.arrayContaining([expect.objectContaining({ field: expect.stringContaining("colour"), message: expect.any(String), code: expect.any(String) })]),
    );
    const badEnum = expectError(await t.test.post("/api/v1/verifications", { ...phone, type: "carrier_pigeon" }), 400, "validation_error");
    expect(badEnum.details).toEqual(expect.arrayContaining([expect.objectContaining({ field: expect.stringMatching(/(^|\.)type$/) })]));
    const limit = expectError(await t.test.get("/api/v1/verifications?limit=101"), 400, "validation_error");
    expect(limit.details).toEqual(expect.arrayContaining([expect.objectContaining({ field: expect.stringMatching(/(^|\.)limit$/) })]));
    const page = expectError(await t.test.get("/api/v1/verifications?page=0"), 400, "validation_error");
    expect(page.details).toEqual(expect.arrayContaining([expect.objectContaining({ field: expect.stringMatching(/(^|\.)page$/) })]));
    const k = await extraKey(t.tenantId, "test");
    const notJson = await k.c.post("/api/v1/verifications", "{not json");
    expectError(notJson, 400, "validation_error");
    const revokeReason = expectError(await k.c.post(`/api/v1/proofs/${UNKNOWN_ID}/revoke`, { reason: "bored" }), 400, "validation_error");
    expect(revokeReason.details).toEqual(expect.arrayContaining([expect.objectContaining({ field: expect.stringMatching(/(^|\.)reason$/) })]));
    expect((await k.c.get("/api/v1/verifications?limit=100&page=1")).status).toBe(200);
  });

  it("400 invalid_identifier and invalid_channel_for_type", async () => {
    const t = await fresh();
    expectError(await t.test.post("/api/v1/verifications", { type: "phone", channel: "sms", identifier: "call me maybe" }), 400, "invalid_identifier");
    expectError(await t.test.post("/api/v1/verifications", { type: "email", channel: "email", identifier: "not-an-email" }), 400, "invalid_identifier");
    expectError(await t.test.post("/api/v1/verifications", { type: "wallet", channel: "ethereum", identifier: "0x1234" }), 400, "invalid_identifier");
    expectError(await t.test.post("/api/v1/verifications", { type: "phone", channel: "email", identifier: "+37069199199" }), 400, "invalid_channel_for_type");
    expectError(await t.test.post("/api/v1/verifications", { type: "wallet", channel: "github", identifier: "octocat" }), 400, "invalid_channel_for_type");
  });
});

describe("channel_unavailable", () => {
  const cases = [
    { body: { type: "phone", channel: "whatsapp", identifier: "+37069199199" }, missing: "WHATSAPP_PHONE_NUMBER" },
    { body: { type: "phone", channel: "sms", identifier: "+37069199199", delivery: "outbound" }, missing: "TWILIO_ACCOUNT_SID" },
    { body: { type: "phone", channel: "whatsapp", identifier: "+37069199199", delivery: "outbound" }, missing: "WHATSAPP_ACCESS_TOKEN" },
    { body: { type: "email", channel: "email", identifier: "someone@example.com" }, missing: "SMTP_URL" },
    { body: { type: "social", channel: "github", identifier: "octocat" }, missing: "OAUTH_GITHUB_CLIENT_ID" },
  ];

  it("answers a live create on a channel without a provider, naming the missing variable; a test key succeeds on the same request", async () => {
    const t = await fresh();
    for (const { body, missing } of cases) {
      const e = expectError(await t.live.post("/api/v1/verifications", body), 400, "channel_unavailable");
      expect(e.message).toContain(missing);
      const ok = await t.test.post("/api/v1/verifications", body);
      expect(ok.status, ok.text).toBe(201);
      expect(ok.body).toMatchObject({ type: body.type, channel: body.channel, status: "pending", test_mode: true });
    }
    // the refused live creates left nothing behind
    const k = await extraKey(t.tenantId, "live");
    expect((await k.c.get("/api/v1/verifications")).body.pagination.total).toBe(0);
  });
});

describe("429 rate_limited", () => {
  it(`allows ${LIMIT} requests a minute per key, then answers 429 with Retry-After and X-RateLimit-*; another tenant's key is unaffected`, async () => {
    const [t, other] = await Promise.all([fresh(), fresh()]);
    const remaining: number[] = [];
    for (let i = 0; i < LIMIT; i++) {
      const r = await t.test.get("/api/v1/verifications");
      expect(r.status).toBe(200);
      expect(r.headers.get("x-ratelimit-limit")).toBe(String(LIMIT));
      remaining.push(Number(r.headers.get("x-ratelimit-remaining")));
    }
    expect(remaining).toEqual([4, 3, 2, 1, 0]);
    const limited = await t.test.get("/api/v1/verifications");
    const e = expectError(limited, 429, "rate_limited");
    const retryAfter = Number(limited.headers.get("retry-after"));
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    // sliding window: a burst that fills this window also weighs on the next one, so the honest
    // wait can pass the window's end (unit tests show a retry after it is let through)
    expect(retryAfter).toBeLessThanOrEqual(120);
    expect(e.retry_after).toBe(retryAfter);
    expect(limited.headers.get("x-ratelimit-limit")).toBe(String(LIMIT));
    expect(limited.headers.get("x-ratelimit-remaining")).toBe("0");
    const reset = Number(limited.headers.get("x-ratelimit-reset"));
    const nowS = Date.now() / 1000;
    expect(reset).toBeGreaterThan(nowS);
    expect(reset).toBeLessThanOrEqual(Math.ceil(nowS) + 60);
    // a POST is limited too, and creates nothing
    expectError(await t.test.post("/api/v1/verifications", phone), 429, "rate_limited");

    const o = await other.test.get("/api/v1/verifications");
    expect(o.status).toBe(200);
    expect(o.headers.get("x-ratelimit-remaining")).toBe(String(LIMIT - 1));
    const created = await other.test.post("/api/v1/verifications", phone);
    expect(created.status).toBe(201);
  });
});

describe("Idempotency-Key", () => {
  it("replays the first 201 for the same key and body, and answers 422 idempotency_conflict for another body", async () => {
    const t = await fresh();
    const key = { "idempotency-key": `create-${Date.now()}` };
    const first = await t.test.post("/api/v1/verifications", phone, key);
    expect(first.status).toBe(201);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    const again = await t.test.post("/api/v1/verifications", phone, key);
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
    expect(again.body.challenge.code).toBe(first.body.challenge.code);
    const conflict = await t.test.post("/api/v1/verifications", { ...phone, identifier: "+37069199190" }, key);
    expectError(conflict, 422, "idempotency_conflict");
    const list = await t.test.get("/api/v1/verifications");
    expect(list.body.pagination.total).toBe(1);
    expect(list.body.data[0].id).toBe(first.body.id);
  });

  it("keeps keys apart per tenant: the same Idempotency-Key from another tenant creates its own verification", async () => {
    const [t, other] = await Promise.all([fresh(), fresh()]);
    const key = { "idempotency-key": "shared-key-1" };
    const a = await t.test.post("/api/v1/verifications", phone, key);
    const b = await other.test.post("/api/v1/verifications", phone, key);
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.headers.get("idempotent-replayed")).toBeNull();
    expect(b.body.id).not.toBe(a.body.id);
  });
});
