// The reference product's JS SDK as a drop-in (docs/compatibility.md, DECISIONS.md "Compatibility
// with the reference product's SDKs"): its calls replayed as plain HTTP, with the request shapes
// its methods send, checking every field its types read. The spec's names stay beside them (a
// superset): each test checks both.
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { decodeJwt, decodeProtectedHeader } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { expectError, waitFor } from "../support/expect-error.ts";
import { startKrakenApi, type KrakenStandIn } from "../support/oauth-providers.ts";
import { startTelegramApi, type TelegramApi } from "../support/providers.ts";
import { startReceiver, type Receiver } from "../support/receiver.ts";
import { api } from "../support/stack.ts";
import { openApiValidator } from "../support/openapi-validate.ts";
import { useStack } from "../support/use-stack.ts";

const BOT_TOKEN = "7000000456:AAHdropInBotTokenForTheReferenceSdk_0456";
const BOT = "DropIn_ci_bot";
const RATE = 40;

let tg: TelegramApi;
let kraken: KrakenStandIn;
let endpoint: Receiver;
const env: Record<string, string> = {};
beforeAll(async () => {
  [tg, kraken, endpoint] = await Promise.all([startTelegramApi({ token: BOT_TOKEN, botUsername: BOT }), startKrakenApi(), startReceiver(200)]);
  Object.assign(env, {
    ALLOW_PRIVATE_TARGETS: "true",
    TELEGRAM_API_URL: tg.url,
    KRAKEN_API_URL: kraken.url,
    WEBHOOK_RETRY_DELAYS_MS: "200,200",
    RATE_LIMIT_PER_MINUTE: String(RATE),
  });
});
afterAll(() => Promise.all([tg?.close(), kraken?.close(), endpoint?.close()]));

const stack = useStack(() => env);

async function tenant(webhookUrl?: string) {
  const r = await stack.admin.createTenant({ name: "Drop-in" }, { headers: stack.adminHeaders });
  const tenantId = r.tenant!.id;
  if (webhookUrl) await stack.admin.setWebhookEndpoint({ tenantId, environment: Environment.TEST, url: webhookUrl }, { headers: stack.adminHeaders });
  return { test: api(stack.url, r.testKey), live: api(stack.url, r.liveKey) };
}

let n = 0;
const email = () => `dropin${n++}@example.com`;

describe("verificationRequests.cancel", () => {
  it("answers the cancelled request (what the SDK reads) with success and status (the spec's answer)", async () => {
    const { test } = await tenant();
    const created = await test.post("/api/v1/verification-requests", { assets: [{ type: "email" }], reference_id: "order-1" });
    expect(created.status, created.text).toBe(201);
    const r = await test.del(`/api/v1/verification-requests/${created.body.id}`);
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({
      success: true,
      status: "cancelled",
      id: created.body.id,
      reference_id: "order-1",
      verification_url: created.body.verification_url,
      cancelled_at: expect.any(String),
    });
    expect(r.body.assets).toHaveLength(1);
    const { success: _s, ...request } = r.body;
    expect(request).toEqual((await test.get(`/api/v1/verification-requests/${created.body.id}`)).body);
    expectError(await test.del(`/api/v1/verification-requests/${created.body.id}`), 409, "invalid_state");
  });
});

describe("RateLimitError.retryAfter", () => {
  it("a 429 has the Retry-After header, error.retry_after and error.retryAfter, all the same seconds", async () => {
    const { test } = await tenant();
    let last: Awaited<ReturnType<typeof test.get>> | undefined;
    for (let i = 0; i <= RATE + 1 && last?.status !== 429; i++) last = await test.get("/api/v1/verifications?limit=1");
    const e = expectError(last!, 429, "rate_limited");
    const header = Number(last!.headers.get("retry-after"));
    expect(header).toBeGreaterThan(0);
    expect(e.retryAfter).toBe(header);
    expect(e.retry_after).toBe(header);
  });
});

describe("verifications.submit with code", () => {
  it("is the wallet signature on a wallet verification", async () => {
    const { live } = await tenant();
    const wallet = privateKeyToAccount(generatePrivateKey());
    const v = await live.post("/api/v1/verifications", { type: "wallet", channel: "ethereum", identifier: wallet.address });
    expect(v.status, v.text).toBe(201);
    const message: string = v.body.challenge.message;
    const intruder = await privateKeyToAccount(generatePrivateKey()).signMessage({ message });
    const wrong = expectError(await live.post(`/api/v1/verifications/${v.body.id}/submit`, { code: intruder }), 400, "invalid_signature");
    expect(wrong.attempts_remaining).toBe(4);
    const ok = await live.post(`/api/v1/verifications/${v.body.id}/submit`, { code: await wallet.signMessage({ message }) });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body).toMatchObject({ id: v.body.id, status: "verified", method: "signature" });
  });

  it("is the bot token on a telegram_bot verification", async () => {
    const { live } = await tenant();
    const v = await live.post("/api/v1/verifications", { type: "telegram_bot", channel: "telegram_bot_token", identifier: `@${BOT}` });
    expect(v.status, v.text).toBe(201);
    const other = "7000000999:AAHanotherBotsTokenThatTelegramRefuses_99";
    expectError(await live.post(`/api/v1/verifications/${v.body.id}/submit`, { code: other }), 400, "invalid_code");
    const ok = await live.post(`/api/v1/verifications/${v.body.id}/submit`, { code: BOT_TOKEN });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body).toMatchObject({ status: "verified", method: "bot_token" });
  });

  it("is the Kraken API key beside api_secret on a kraken verification; without api_secret it is validation_error", async () => {
    const { live } = await tenant();
    const iiban = "AA77 DROP INSD KABC";
    const v = await live.post("/api/v1/verifications", { type: "account", channel: "kraken", identifier: iiban });
    expect(v.status, v.text).toBe(201);
    const key = kraken.addKey(iiban);
    const missing = expectError(await live.post(`/api/v1/verifications/${v.body.id}/submit`, { code: key.key }), 400, "validation_error");
    expect(missing.details).toEqual([expect.objectContaining({ field: "api_secret" })]);
    const ok = await live.post(`/api/v1/verifications/${v.body.id}/submit`, { code: key.key, api_secret: key.secret });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body).toMatchObject({ status: "verified", method: "api_key" });
  });
});

describe("sessions with context and the channel sms", () => {
  it("context is client_metadata (answered as client_metadata); sms opens the messages app with the text to send", async () => {
    const { test } = await tenant();
    const context = { order: "o-7", step: 2 };
    const s = await test.post("/api/v1/sessions", { channel: "sms", context });
    expect(s.status, s.text).toBe(201);
    expect(s.body).toMatchObject({ channel: "sms", status: "pending", client_metadata: context });
    expect(s.body.deep_link).toMatch(/^sms:\+\d+\?body=Verify%20my%20phone%20number%3A%20/);
    expect(s.body.instructions).toContain("messages app");
    const done = await test.post(`/api/v1/sessions/${s.body.id}/test-verify`, {});
    expect(done.status, done.text).toBe(200);
    expect(done.body).toMatchObject({ status: "verified", channel: "sms", client_metadata: context });

    const auth = await test.post("/api/v1/auth/sessions", { channel: "sms", phone_number: "+37069100077", context });
    expect(auth.status, auth.text).toBe(201);
    expect(auth.body).toMatchObject({ channel: "sms", client_metadata: context });

    const both = expectError(await test.post("/api/v1/sessions", { channel: "sms", context, client_metadata: { other: 1 } }), 400, "validation_error");
    expect(both.details).toEqual([expect.objectContaining({ field: "context" })]);
    expect((await test.post("/api/v1/sessions", { channel: "telegram", context, client_metadata: context })).status).toBe(201);
    expectError(await test.post("/api/v1/sessions", { channel: "sms", context: "not an object" }), 400, "validation_error");
  });
});

describe("user_id", () => {
  it("is in the proof token and in validate's verification, beside external_user_id; absent when the verification has none", async () => {
    const { test } = await tenant();
    const v = await test.post("/api/v1/verifications", { type: "email", channel: "email", identifier: email(), external_user_id: "user-77" });
    const done = await test.post(`/api/v1/verifications/${v.body.id}/test-verify`);
    expect(decodeJwt(done.body.proof_token)).toMatchObject({ external_user_id: "user-77", user_id: "user-77" });
    const valid = await test.post("/api/v1/proofs/validate", { proof_token: done.body.proof_token });
    expect(valid.body).toMatchObject({ valid: true, verification: { id: v.body.id, external_user_id: "user-77", user_id: "user-77" } });

    const anon = await test.post("/api/v1/verifications", { type: "email", channel: "email", identifier: email() });
    const anonDone = await test.post(`/api/v1/verifications/${anon.body.id}/test-verify`);
    expect(decodeJwt(anonDone.body.proof_token)).not.toHaveProperty("user_id");
    const anonValid = await test.post("/api/v1/proofs/validate", { proof_token: anonDone.body.proof_token });
    expect(anonValid.body.verification).not.toHaveProperty("user_id");
    expect(anonValid.body.verification).not.toHaveProperty("external_user_id");
  });
});

describe("proofs.getRevocationList", () => {
  it("asked with a test key is the test list (signed by a test key), with count and issued_at; live or no key is the live list", async () => {
    const { test, live } = await tenant();
    const v = await test.post("/api/v1/verifications", { type: "email", channel: "email", identifier: email() });
    await test.post(`/api/v1/verifications/${v.body.id}/test-verify`);
    // proofs.revoke(id) sends {} and reads reason
    const revoked = await test.post(`/api/v1/proofs/${v.body.id}/revoke`, {});
    expect(revoked.status, revoked.text).toBe(200);
    expect(revoked.body).toMatchObject({ success: true, verification_id: v.body.id, reason: "other", revoked_at: expect.any(String) });
    const again = await test.post(`/api/v1/proofs/${v.body.id}/revoke`, { reason: "fraud" });
    expect(again.body).toMatchObject({ reason: "other", revoked_at: revoked.body.revoked_at });

    const list = await test.get("/api/v1/proofs/revoked");
    expect(list.status, list.text).toBe(200);
    expect(list.body.revoked.map((e: { proof_id: string }) => e.proof_id)).toContain(v.body.id);
    expect(list.body.count).toBe(list.body.revoked.length);
    expect(list.body.issued_at).toBe(list.body.generated_at);
    expect(list.headers.get("vary")).toMatch(/authorization/i);
    const testKids = (await api(stack.url).get("/.well-known/jwks-test.json")).body.keys.map((k: { kid: string }) => k.kid);
    expect(list.body.kid).toBe(decodeProtectedHeader(list.body.signature).kid);
    expect(testKids).toContain(list.body.kid);

    for (const other of [
      await api(stack.url).get("/api/v1/proofs/revoked"),
      await live.get("/api/v1/proofs/revoked"),
      await test.get("/api/v1/proofs/revoked?env=live"),
    ]) {
      expect(other.status).toBe(200);
      expect(other.body.revoked.map((e: { proof_id: string }) => e.proof_id)).not.toContain(v.body.id);
      expect(other.body.count).toBe(other.body.revoked.length);
      expect(other.body.kid).toBe(decodeProtectedHeader(other.body.signature).kid);
      expect(testKids).not.toContain(other.body.kid);
    }
  });
});

describe("webhooks: deliveries list, stats, retry and detail", () => {
  it("answer the SDK's names beside the spec's", async () => {
    endpoint.answer(500);
    const { test } = await tenant(endpoint.url);
    const v = await test.post("/api/v1/verifications", { type: "email", channel: "email", identifier: email() });
    await test.post(`/api/v1/verifications/${v.body.id}/test-verify`);
    const stats = await waitFor(
      async () => {
        const s = (await test.get("/api/v1/webhook-deliveries/stats")).body;
        return s.failed === 1 ? s : undefined;
      },
      15_000,
      1_000,
    ); // every poll counts against the tenant's RATE requests per minute
    expect(stats).toEqual({
      total: 1,
      delivered: 0,
      failed: 1,
      pending: 0,
      success_rate: 0,
      by_status: { pending: 0, delivered: 0, failed: 1 },
      delivery_rate: "0.00",
      recent_failures_24h: 1,
    });

    const list = await test.get("/api/v1/webhook-deliveries?limit=10");
    expect(list.status, list.text).toBe(200);
    expect(list.body.deliveries).toEqual(list.body.data);
    expect(list.body.data).toHaveLength(1);
    expect(list.body.pagination).toMatchObject({ page: 1, limit: 10, total: 1, pages: 1, total_pages: 1 });
    const id = list.body.data[0].id;
    // WebhookDelivery as the SDK reads it, in the list and the detail alike
    const failed = (await test.get(`/api/v1/webhook-deliveries/${id}`)).body;
    const sdkFields = (d: Record<string, unknown>) => ({
      id: d.id,
      url: d.url,
      event_type: d.event_type,
      status: d.status,
      attempts: d.attempts,
      max_attempts: d.max_attempts,
      response_status: d.response_status,
      error_message: d.error_message,
      last_attempt_at: d.last_attempt_at,
      next_retry_at: d.next_retry_at,
      delivered_at: d.delivered_at,
      verification_request_id: d.verification_request_id,
      created_at: d.created_at,
      updated_at: d.updated_at,
    });
    expect(sdkFields(list.body.data[0])).toEqual(sdkFields(failed));
    expect(failed).toMatchObject({ status: "failed", response_status: 500, delivered_at: null, next_retry_at: null, attempts: 3 });
    expect(typeof failed.error_message === "string" || failed.error_message === null).toBe(true);
    expect(Date.parse(failed.last_attempt_at)).not.toBeNaN();

    endpoint.answer(200);
    const retry = await test.post(`/api/v1/webhook-deliveries/${id}/retry`);
    expect(retry.status, retry.text).toBe(200);
    expect(retry.body).toMatchObject({ success: true, delivery_id: id, message: expect.any(String), delivery: { id } });
    expect(retry.body.next_retry_at).toBe(retry.body.delivery.next_retry_at);
    expect(Date.parse(retry.body.next_retry_at)).not.toBeNaN();

    const delivered = await waitFor(
      async () => {
        const d = (await test.get(`/api/v1/webhook-deliveries/${id}`)).body;
        return d.status === "delivered" ? d : undefined;
      },
      15_000,
      1_000,
    );
    expect(delivered!.delivered_at).toBe(delivered!.last_attempt_at);
    expect(Date.parse(delivered!.delivered_at)).not.toBeNaN();
    // the delivered body is what the OpenAPI document's x-webhooks says
    const doc = (await api(stack.url).get("/api/openapi.json")).body;
    const schema = doc["x-webhooks"]["verification.completed"].post.requestBody.content["application/json"].schema;
    const sent = JSON.parse(endpoint.requests.at(-1)!.body);
    expect(sent).toMatchObject({ event: "verification.completed", verification_id: v.body.id });
    expect(openApiValidator(doc)(schema, sent)).toEqual([]);
    expect(openApiValidator(doc)(schema, { ...sent, status: 7 })).not.toEqual([]);
    const after = (await test.get("/api/v1/webhook-deliveries/stats")).body;
    expect(after).toMatchObject({ delivered: 1, failed: 0, success_rate: 100, delivery_rate: "100.00", recent_failures_24h: 0 });
  });
});
