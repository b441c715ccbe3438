// Compatibility with the reference product's SDKs (docs/compatibility.md), each point as a tenant
// using such an SDK meets it: submit with `code`, revoke without a body, X-Proof-Signature on
// webhooks, validity_requirement on requests, PROOF_ISSUER as the proofs' iss, a verification's
// own callback_url, and updated_at on every verification.
import { createHmac, timingSafeEqual } from "node:crypto";
import { decodeJwt } from "jose";
import { afterAll, describe, expect, it } from "vitest";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { ManualClock } from "@icv/platform";
import { expectError, waitFor } from "../support/expect-error.ts";
import { startReceiver, type Receiver } from "../support/receiver.ts";
import { otherCode, sentCode } from "../support/sent-code.ts";
import { api } from "../support/stack.ts";
import { useStack } from "../support/use-stack.ts";

const ISSUER = "https://proofs.example.test";
const clock = new ManualClock(Date.now());
const stack = useStack(
  {
    ALLOW_PRIVATE_TARGETS: "true",
    WEBHOOK_RETRY_DELAYS_MS: "200,200",
    PUBLIC_BASE_URL: "https://verify.example.test",
    PROOF_ISSUER: ISSUER,
    SWEEP_INTERVAL_MS: "100",
  },
  clock,
);
const receivers: Receiver[] = [];
afterAll(() => Promise.all(receivers.map((r) => r.close())));

async function receiver(): Promise<Receiver> {
  const r = await startReceiver(200);
  receivers.push(r);
  return r;
}

async function tenant(endpoint?: string) {
  const r = await stack.admin.createTenant({ name: "Compat" }, { headers: stack.adminHeaders });
  const tenantId = r.tenant!.id;
  if (endpoint) await stack.admin.setWebhookEndpoint({ tenantId, environment: Environment.TEST, url: endpoint }, { headers: stack.adminHeaders });
  return { c: api(stack.url, r.testKey), secret: r.testWebhookSecret };
}

let n = 0;
const email = () => `compat${n++}@example.com`;

async function created(c: ReturnType<typeof api>, body: Record<string, unknown>) {
  const r = await c.post("/api/v1/verifications", body);
  expect(r.status, r.text).toBe(201);
  return r.body;
}

const hex = (body: string, secret: string) => createHmac("sha256", secret).update(body).digest("hex");

describe("submit: code is an alias of challenge_code", () => {
  it("completes an email verification with {code}; a wrong one counts an attempt; two different codes are refused", async () => {
    const { c } = await tenant();
    const v = await created(c, { type: "email", channel: "email", identifier: email() });
    const code = await sentCode(c, v.id);
    const wrong = expectError(await c.post(`/api/v1/verifications/${v.id}/submit`, { code: otherCode(code) }), 400, "invalid_code");
    expect(wrong.attempts_remaining).toBe(4);
    const both = expectError(await c.post(`/api/v1/verifications/${v.id}/submit`, { code, challenge_code: otherCode(code) }), 400, "validation_error");
    expect(both.details).toEqual(expect.arrayContaining([expect.objectContaining({ field: "code" })]));
    const ok = await c.post(`/api/v1/verifications/${v.id}/submit`, { code });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body).toMatchObject({ id: v.id, status: "verified", method: "otp", attempts: 1 });
  });
});

describe("revoke without a body", () => {
  it("revokes with reason other; a body's reason still counts", async () => {
    const { c } = await tenant();
    const v = await created(c, { type: "email", channel: "email", identifier: email() });
    expect((await c.post(`/api/v1/verifications/${v.id}/test-verify`)).status).toBe(200);
    const r = await c.post(`/api/v1/proofs/${v.id}/revoke`);
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ success: true, verification_id: v.id, status: "revoked" });
    expect((await c.get(`/api/v1/verifications/${v.id}`)).body).toMatchObject({ status: "revoked", revoked_reason: "other" });
    expect((await c.get(`/api/v1/proofs/${v.id}/status`)).body).toMatchObject({ is_revoked: true, revoked_reason: "other" });

    // a JSON content type with an empty body, as some HTTP clients send it
    const e = await created(c, { type: "email", channel: "email", identifier: email() });
    await c.post(`/api/v1/verifications/${e.id}/test-verify`);
    const empty = await c.post(`/api/v1/proofs/${e.id}/revoke`, "");
    expect(empty.status, empty.text).toBe(200);
    expect((await c.get(`/api/v1/verifications/${e.id}`)).body.revoked_reason).toBe("other");

    const w = await created(c, { type: "email", channel: "email", identifier: email() });
    await c.post(`/api/v1/verifications/${w.id}/test-verify`);
    expect((await c.post(`/api/v1/proofs/${w.id}/revoke`, { reason: "fraud" })).status).toBe(200);
    expect((await c.get(`/api/v1/verifications/${w.id}`)).body.revoked_reason).toBe("fraud");
    expectError(await c.post(`/api/v1/proofs/${w.id}/revoke`, { reason: "bored" }), 400, "validation_error");
  });
});

describe("webhooks carry X-Proof-Signature", () => {
  it("equal to X-Service-Signature: lower-case hex HMAC-SHA256 of the raw body with the webhook secret", async () => {
    const endpoint = await receiver();
    const { c, secret } = await tenant(endpoint.url);
    const v = await created(c, { type: "email", channel: "email", identifier: email() });
    await c.post(`/api/v1/verifications/${v.id}/test-verify`);
    const [req] = await endpoint.waitFor(1, 10_000);
    expect(JSON.parse(req.body)).toMatchObject({ event: "verification.completed", verification_id: v.id });
    const proofSig = String(req.headers["x-proof-signature"]);
    expect(proofSig).toMatch(/^[0-9a-f]{64}$/);
    expect(proofSig).toBe(req.headers["x-service-signature"]);
    expect(timingSafeEqual(Buffer.from(proofSig), Buffer.from(hex(req.body, secret)))).toBe(true);
    expect(proofSig).not.toBe(hex(req.body, `${secret}x`));
  });
});

describe("validity_requirement on verification requests", () => {
  const page = () => api(stack.url);
  const autoVerify = (id: string, token: string) => page().post(`/api/v1/verify/request/${id}/assets/0/auto-verify`, undefined, { "x-request-token": token });

  it("is the maximum age of a reusable proof: 1h refuses a 2-hour-old proof, 1d takes it", async () => {
    const { c } = await tenant();
    const addr = email();
    const v = await created(c, { type: "email", channel: "email", identifier: addr, external_user_id: "u-validity" });
    await c.post(`/api/v1/verifications/${v.id}/test-verify`);
    clock.advance(2 * 3600_000);
    const ask = async (validity: string) => {
      const r = await c.post("/api/v1/verification-requests", {
        assets: [{ type: "email", identifier: addr, channel: "email" }],
        external_user_id: "u-validity",
        validity_requirement: validity,
      });
      expect(r.status, r.text).toBe(201);
      return { id: r.body.id as string, token: new URL(r.body.verification_url).hash.slice(1), body: r.body };
    };
    const strict = await ask("1h");
    expect(strict.body.max_proof_age).toBe(3600);
    expectError(await autoVerify(strict.id, strict.token), 422, "proof_too_old");
    const lenient = await ask("1d");
    expect(lenient.body.max_proof_age).toBe(86_400);
    const done = await autoVerify(lenient.id, lenient.token);
    expect(done.status, done.text).toBe(200);
    expect((await ask("2w")).body.max_proof_age).toBe(14 * 86_400);
    expect((await ask("6m")).body.max_proof_age).toBe(180 * 86_400);
  });

  it("refuses other forms, ages outside 1 h to 1 year, and max_proof_age given too", async () => {
    const { c } = await tenant();
    const post = (extra: Record<string, unknown>) => c.post("/api/v1/verification-requests", { assets: [{ type: "email" }], ...extra });
    for (const bad of ["30", "30x", "1.5d", "d", "-1d", " 1d", "0h", "13m", "366d", 30]) {
      expectError(await post({ validity_requirement: bad }), 400, "validation_error");
    }
    const both = expectError(await post({ validity_requirement: "1d", max_proof_age: 86_400 }), 400, "validation_error");
    expect(both.details).toEqual(expect.arrayContaining([expect.objectContaining({ field: "validity_requirement" })]));
  });
});

describe("PROOF_ISSUER", () => {
  it("is the iss of every proof, and validation accepts it", async () => {
    const { c } = await tenant();
    const v = await created(c, { type: "email", channel: "email", identifier: email() });
    const done = await c.post(`/api/v1/verifications/${v.id}/test-verify`);
    expect(decodeJwt(done.body.proof_token).iss).toBe(ISSUER);
    expect((await c.post("/api/v1/proofs/validate", { proof_token: done.body.proof_token })).body.valid).toBe(true);
  });
});

describe("a verification's own callback_url", () => {
  it("receives that verification's completion, signed like the endpoint's; other verifications never reach it", async () => {
    const endpoint = await receiver();
    const callback = await receiver();
    const { c, secret } = await tenant(endpoint.url);
    const other = await created(c, { type: "email", channel: "email", identifier: email() });
    const v = await created(c, {
      type: "email",
      channel: "email",
      identifier: email(),
      callback_url: callback.url,
      external_user_id: "u-cb",
    });
    expect(v.callback_url).toBe(callback.url);
    expect((await c.get(`/api/v1/verifications/${v.id}`)).body.callback_url).toBe(callback.url);
    await c.post(`/api/v1/verifications/${other.id}/test-verify`);
    await c.post(`/api/v1/verifications/${v.id}/test-verify`);

    const [got] = await callback.waitFor(1, 10_000);
    const body = JSON.parse(got.body);
    expect(body).toMatchObject({
      event: "verification.completed",
      test: true,
      verification_id: v.id,
      external_user_id: "u-cb",
      status: "verified",
    });
    expect(body.callback_url).toBeUndefined();
    expect(got.headers["x-service-signature"]).toBe(hex(got.body, secret));
    expect(got.headers["x-proof-signature"]).toBe(got.headers["x-service-signature"]);
    // the tenant's endpoint gets both completions, the same bytes for this one
    const both = await waitFor(async () => (endpoint.requests.length >= 2 ? endpoint.requests : undefined), 10_000);
    expect(both!.map((r) => JSON.parse(r.body).verification_id).sort()).toEqual([other.id, v.id].sort());
    expect(both!.find((r) => JSON.parse(r.body).verification_id === v.id)!.body).toBe(got.body);
    await new Promise((r) => setTimeout(r, 300));
    expect(callback.requests).toHaveLength(1);
    // the tenant sees the callback's delivery among its deliveries
    const deliveries = await c.get("/api/v1/webhook-deliveries");
    const urls = deliveries.body.data.map((d: { url: string }) => d.url);
    expect(urls.filter((u: string) => u === callback.url)).toHaveLength(1);
    expect(urls.filter((u: string) => u === endpoint.url)).toHaveLength(2);
  });

  it("is refused unless an http(s) URL without credentials", async () => {
    const { c } = await tenant();
    for (const bad of ["ftp://example.com/x", "not a url", "https://user:pw@example.com/x", "javascript:alert(1)", "", `https://e.com/${"x".repeat(2100)}`]) {
      expectError(await c.post("/api/v1/verifications", { type: "email", channel: "email", identifier: email(), callback_url: bad }), 400, "validation_error");
    }
  });
});

describe("updated_at", () => {
  it("is on every verification: created_at at first, then the time of each change", async () => {
    const { c } = await tenant();
    const v = await created(c, { type: "email", channel: "email", identifier: email() });
    expect(v.updated_at).toBe(v.created_at);
    const code = await sentCode(c, v.id);
    clock.advance(5_000);
    await c.post(`/api/v1/verifications/${v.id}/submit`, { code: otherCode(code) });
    const tried = (await c.get(`/api/v1/verifications/${v.id}`)).body;
    expect(Date.parse(tried.updated_at) - Date.parse(v.created_at)).toBe(5_000);
    clock.advance(5_000);
    const done = await c.post(`/api/v1/verifications/${v.id}/submit`, { challenge_code: code });
    expect(done.body.updated_at).toBe(done.body.verified_at);
    const list = await c.get("/api/v1/verifications");
    expect(list.body.data.length).toBeGreaterThan(0);
    for (const item of list.body.data) expect(Date.parse(item.updated_at)).toBeGreaterThanOrEqual(Date.parse(item.created_at));
  });
});
