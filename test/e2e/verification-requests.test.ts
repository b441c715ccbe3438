// Verification requests through the public API: creation and validation, the state machine
// driven by the assets' verifications (partial with and without partial_ok, optional assets,
// cancel, expiry with a hand-moved clock), the request webhooks as a local receiver gets them
// (signed, with the proofs), isolation, pagination and by-reference.
import { createHmac } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { ManualClock } from "@icv/platform";
import { verifyRequestToken } from "../../services/verification/src/requests/token.ts";
import { expectError, waitFor } from "../support/expect-error.ts";
import { startReceiver, type Receiver, type ReceivedRequest } from "../support/receiver.ts";
import { api, startStack, type Stack } from "../support/stack.ts";

const HMAC_KEY = "request-tests-challenge-hmac-key-0123456789";
const BASE = "https://verify.example.test";
const clock = new ManualClock(Date.now());
let stack: Stack;
const receivers: Receiver[] = [];

beforeAll(async () => {
  stack = await startStack(
    {
      ALLOW_PRIVATE_TARGETS: "true",
      WEBHOOK_RETRY_DELAYS_MS: "200,200",
      SWEEP_INTERVAL_MS: "100",
      PUBLIC_BASE_URL: BASE,
      CHALLENGE_HMAC_KEY: HMAC_KEY,
    },
    clock,
  );
});
afterAll(async () => {
  await stack?.close();
  await Promise.all(receivers.map((r) => r.close()));
});

const receiver = async () => {
  const r = await startReceiver(200);
  receivers.push(r);
  return r;
};

interface Tenant {
  tenantId: string;
  secret: string;
  c: ReturnType<typeof api>;
  live: ReturnType<typeof api>;
}

async function tenant(endpoint?: string): Promise<Tenant> {
  const r = await stack.admin.createTenant({ name: "Requests" }, { headers: stack.adminHeaders });
  const tenantId = r.tenant!.id;
  if (endpoint) await stack.admin.setWebhookEndpoint({ tenantId, environment: Environment.TEST, url: endpoint }, { headers: stack.adminHeaders });
  return { tenantId, secret: r.testWebhookSecret, c: api(stack.url, r.testKey), live: api(stack.url, r.liveKey) };
}

let n = 0;
const phone = () => `+370692${String(n++).padStart(5, "0")}`;
const email = () => `user${n++}@example.com`;

async function create(t: Tenant, body: Record<string, unknown>) {
  const r = await t.c.post("/api/v1/verification-requests", body);
  expect(r.status, r.text).toBe(201);
  return r.body;
}

const testVerify = async (t: Tenant, verificationId: string) =>
  expect((await t.c.post(`/api/v1/verifications/${verificationId}/test-verify`)).status).toBe(200);

/** The request once its status is `status` (fails after 10 s). */
async function requestWhen(t: Tenant, id: string, status: string) {
  const r = await waitFor(async () => {
    const g = await t.c.get(`/api/v1/verification-requests/${id}`);
    return g.body?.status === status ? g.body : undefined;
  }, 10_000);
  if (!r) throw new Error(`request ${id} never became ${status}: ${JSON.stringify((await t.c.get(`/api/v1/verification-requests/${id}`)).body)}`);
  return r;
}

const signed = (t: Tenant, req: ReceivedRequest) => new Webhook(t.secret).verify(req.body, req.headers as Record<string, string>) as any;
/** The request events of `requestId` the receiver got (the tenant endpoint also gets verification.completed). */
const events = (t: Tenant, rx: Receiver, requestId: string) => rx.requests.map((r) => signed(t, r)).filter((b) => b.request_id === requestId);
/** Waits until the receiver got `count` events of the request; answers them in arrival order. */
async function eventsWhen(t: Tenant, rx: Receiver, requestId: string, count: number) {
  await waitFor(async () => events(t, rx, requestId).length >= count, 10_000);
  const got = events(t, rx, requestId);
  expect(got.length, JSON.stringify(got.map((b) => b.event))).toBe(count);
  return got;
}

describe("creation", () => {
  it("answers 201 with the spec's fields, defaults, a signed verification_url, and starts the assets that have identifier and channel", async () => {
    const t = await tenant();
    const before = clock.now().getTime();
    const tel = phone();
    const body = await create(t, {
      assets: [
        { type: "phone", identifier: tel, channel: "telegram" },
        { type: "email", allowed_channels: ["email"], required: false },
      ],
      reference_id: "order-1",
      action_context: { title: "Confirm your account", description: "Two steps" },
      redirect_url: "https://shop.example.com/done",
      external_user_id: "user-7",
    });
    expect(body).toEqual({
      id: expect.stringMatching(/^vreq_/),
      status: "pending",
      reference_id: "order-1",
      assets: [
        {
          index: 0,
          type: "phone",
          identifier: tel,
          channel: "telegram",
          allowed_channels: null,
          required: true,
          status: "in_progress",
          verification_id: expect.stringMatching(/^ver_/),
          proof_format: "jwt",
        },
        {
          index: 1,
          type: "email",
          identifier: null,
          channel: null,
          allowed_channels: ["email"],
          required: false,
          status: "pending",
          verification_id: null,
          proof_format: "jwt",
        },
      ],
      verification_url: expect.any(String),
      created_at: new Date(before).toISOString(),
      expires_at: new Date(before + 86_400_000).toISOString(),
      action_type: "verification",
      action_context: { title: "Confirm your account", description: "Two steps" },
      redirect_url: "https://shop.example.com/done",
      callback_url: null,
      partial_ok: false,
      external_user_id: "user-7",
      test_mode: true,
    });
    // {PUBLIC_BASE_URL}/verify/{id}#{token}: the token is bound to this request and its expiry
    const m = /^(.+)\/verify\/([^#]+)#(.+)$/.exec(body.verification_url)!;
    expect(m[1]).toBe(BASE);
    expect(m[2]).toBe(body.id);
    const key = createHmac("sha256", HMAC_KEY).update("icv verification request tokens").digest("base64");
    expect(verifyRequestToken(key, body.id, m[3], clock.now())).toEqual({ valid: true, expiresAt: new Date(body.expires_at) });
    expect(verifyRequestToken(key, "vreq_other", m[3], clock.now())).toEqual({ valid: false, reason: "invalid_signature" });
    // the same URL on every read
    expect((await t.c.get(`/api/v1/verification-requests/${body.id}`)).body.verification_url).toBe(body.verification_url);
    // the started verification belongs to the tenant and carries the request's external_user_id
    const v = await t.c.get(`/api/v1/verifications/${body.assets[0].verification_id}`);
    expect(v.body).toMatchObject({ status: "pending", type: "phone", channel: "telegram", identifier: tel, external_user_id: "user-7" });
  });

  it("refuses invalid bodies", async () => {
    const t = await tenant();
    const post = (b: unknown) => t.c.post("/api/v1/verification-requests", b);
    const a = { type: "phone" };
    expectError(await post({}), 400, "validation_error");
    expectError(await post({ assets: [] }), 400, "validation_error");
    expectError(await post({ assets: Array.from({ length: 11 }, () => a) }), 400, "validation_error");
    expectError(await post({ assets: [{ type: "phone", required: false }] }), 400, "validation_error");
    expectError(await post({ assets: [a], expires_in: 59 }), 400, "validation_error");
    expectError(await post({ assets: [a], expires_in: 604_801 }), 400, "validation_error");
    expectError(await post({ assets: [a], surprise: 1 }), 400, "validation_error");
    expectError(await post({ assets: [{ type: "phone", color: "red" }] }), 400, "validation_error");
    expectError(await post({ assets: [a], action_type: "dance" }), 400, "validation_error");
    expectError(await post({ assets: [a], callback_url: "ftp://example.com/x" }), 400, "validation_error");
    expectError(await post({ assets: [a], redirect_url: "javascript:alert(1)" }), 400, "validation_error");
    expectError(await post({ assets: [{ type: "phone", channel: "email" }] }), 400, "invalid_channel_for_type");
    expectError(await post({ assets: [{ type: "phone", allowed_channels: ["telegram"], channel: "sms" }] }), 400, "validation_error");
    expectError(await post({ assets: [{ type: "phone", identifier: "not a phone", channel: "telegram" }] }), 400, "invalid_identifier");
    expectError(await post({ assets: [{ type: "email", identifier: "nope" }] }), 400, "invalid_identifier");
    // the limits themselves pass
    expect((await post({ assets: Array.from({ length: 10 }, () => a), expires_in: 604_800 })).status).toBe(201);
    expect((await post({ assets: [a], expires_in: 60 })).status).toBe(201);
    // nothing was stored by the refused ones
    expect((await t.c.get("/api/v1/verification-requests")).body.pagination.total).toBe(2);
    // live: a channel whose provider is not configured refuses the request before any verification is made
    const live = await t.live.post("/api/v1/verification-requests", {
      assets: [
        { type: "wallet", identifier: "0x52908400098527886e0f7030069857d2e4169ee7", channel: "ethereum" },
        { type: "phone", identifier: phone(), channel: "telegram" },
      ],
    });
    expect(expectError(live, 400, "channel_unavailable").message).toMatch(/^assets\[1\]: /);
    expect((await t.live.get("/api/v1/verifications")).body.pagination.total).toBe(0);
    expect((await t.live.get("/api/v1/verification-requests")).body.pagination.total).toBe(0);
  });
});

describe("state machine and webhooks", () => {
  it("partial_ok: partial then completed, each delivered signed with the proofs to the endpoint and to callback_url", async () => {
    const endpoint = await receiver();
    const callback = await receiver();
    const t = await tenant(endpoint.url);
    const r = await create(t, {
      assets: [
        { type: "phone", identifier: phone(), channel: "telegram" },
        { type: "email", identifier: email(), channel: "email" },
        { type: "phone", identifier: phone(), channel: "sms", required: false },
      ],
      reference_id: "order-wh",
      callback_url: callback.url,
      partial_ok: true,
    });
    expect(r.callback_url).toBe(callback.url);
    const [v0, v1, v2] = r.assets.map((a: any) => a.verification_id);

    await testVerify(t, v0);
    const partial = await requestWhen(t, r.id, "partial");
    expect(partial.assets.map((a: any) => a.status)).toEqual(["verified", "in_progress", "in_progress"]);
    const [p1] = await eventsWhen(t, endpoint, r.id, 1);
    const [p2] = await eventsWhen(t, callback, r.id, 1);
    const proof0 = (await t.c.get(`/api/v1/verifications/${v0}`)).body.proof;
    for (const body of [p1, p2]) {
      expect(body).toEqual({
        id: expect.stringMatching(/^evt_/),
        event: "verification_request.partial",
        test: true,
        created_at: expect.any(String),
        request_id: r.id,
        reference_id: "order-wh",
        status: "partial",
        proofs: [
          {
            asset_index: 0,
            type: "phone",
            verification_id: v0,
            proof_token: proof0.token,
            expires_at: proof0.expires_at,
            identifier_salt: proof0.identifier_salt,
          },
        ],
        changed_at: expect.any(String),
      });
    }

    await testVerify(t, v1);
    const done = await requestWhen(t, r.id, "completed");
    // the optional asset is not needed for completion
    expect(done.assets.map((a: any) => a.status)).toEqual(["verified", "verified", "in_progress"]);
    expect(done.completed_at).toEqual(expect.any(String));
    await eventsWhen(t, endpoint, r.id, 2);
    const [, completed] = await eventsWhen(t, callback, r.id, 2);
    const proof1 = (await t.c.get(`/api/v1/verifications/${v1}`)).body.proof;
    expect(completed).toMatchObject({
      event: "verification_request.completed",
      test: true,
      request_id: r.id,
      status: "completed",
      proofs: [
        {
          asset_index: 0,
          type: "phone",
          verification_id: v0,
          proof_token: proof0.token,
          expires_at: proof0.expires_at,
          identifier_salt: proof0.identifier_salt,
        },
        {
          asset_index: 1,
          type: "email",
          verification_id: v1,
          proof_token: proof1.token,
          expires_at: proof1.expires_at,
          identifier_salt: proof1.identifier_salt,
        },
      ],
    });
    expect(events(t, endpoint, r.id).map((b) => b.event)).toEqual(["verification_request.partial", "verification_request.completed"]);
    // recorded deliveries carry the request id
    const d = await t.c.get(`/api/v1/webhook-deliveries?verification_request_id=${r.id}`);
    expect(d.body.data).toHaveLength(4);

    // a completed request is final: a later verification changes nothing, cancel is refused
    await testVerify(t, v2);
    await new Promise((res) => setTimeout(res, 500));
    expect((await t.c.get(`/api/v1/verification-requests/${r.id}`)).body.status).toBe("completed");
    expectError(await t.c.del(`/api/v1/verification-requests/${r.id}`), 409, "invalid_state");
    expect(events(t, endpoint, r.id)).toHaveLength(2);
  });

  it("without partial_ok: partial is a status but no event; completed is sent", async () => {
    const endpoint = await receiver();
    const t = await tenant(endpoint.url);
    const r = await create(t, {
      assets: [
        { type: "phone", identifier: phone(), channel: "telegram" },
        { type: "phone", identifier: phone(), channel: "whatsapp" },
      ],
    });
    await testVerify(t, r.assets[0].verification_id);
    await requestWhen(t, r.id, "partial");
    await testVerify(t, r.assets[1].verification_id);
    await requestWhen(t, r.id, "completed");
    await eventsWhen(t, endpoint, r.id, 1);
    await new Promise((res) => setTimeout(res, 500));
    expect(events(t, endpoint, r.id).map((b) => b.event)).toEqual(["verification_request.completed"]);
    expect(events(t, endpoint, r.id)[0].proofs).toHaveLength(2);
  });

  it("an optional asset verified alone leaves the request pending; one required asset completes it", async () => {
    const t = await tenant();
    const r = await create(t, {
      assets: [
        { type: "phone", identifier: phone(), channel: "telegram", required: false },
        { type: "email", identifier: email(), channel: "email" },
      ],
      partial_ok: true,
    });
    await testVerify(t, r.assets[0].verification_id);
    await waitFor(async () => (await t.c.get(`/api/v1/verification-requests/${r.id}`)).body.assets[0].status === "verified", 10_000);
    expect((await t.c.get(`/api/v1/verification-requests/${r.id}`)).body).toMatchObject({
      status: "pending",
      assets: [{ status: "verified" }, { status: "in_progress" }],
    });
    await testVerify(t, r.assets[1].verification_id);
    await requestWhen(t, r.id, "completed");
  });

  it("cancel from pending and from partial: the cancelled request with {success, status}, pending verifications expire, then invalid_state", async () => {
    const t = await tenant();
    const pending = await create(t, { assets: [{ type: "phone", identifier: phone(), channel: "telegram" }, { type: "email" }] });
    const c1 = await t.c.del(`/api/v1/verification-requests/${pending.id}`);
    expect(c1.status).toBe(200);
    expect(c1.body).toMatchObject({ success: true, status: "cancelled" });
    const g = (await t.c.get(`/api/v1/verification-requests/${pending.id}`)).body;
    expect(c1.body).toEqual({ ...g, success: true });
    expect(g).toMatchObject({
      status: "cancelled",
      cancelled_at: expect.any(String),
      assets: [{ status: "expired" }, { status: "expired" }],
    });
    expect((await t.c.get(`/api/v1/verifications/${pending.assets[0].verification_id}`)).body.status).toBe("expired");
    expectError(await t.c.del(`/api/v1/verification-requests/${pending.id}`), 409, "invalid_state");

    const partial = await create(t, {
      assets: [
        { type: "phone", identifier: phone(), channel: "telegram" },
        { type: "phone", identifier: phone(), channel: "telegram" },
      ],
    });
    await testVerify(t, partial.assets[0].verification_id);
    await requestWhen(t, partial.id, "partial");
    expect((await t.c.del(`/api/v1/verification-requests/${partial.id}`)).body).toMatchObject({ success: true, status: "cancelled", id: partial.id });
    expect((await t.c.get(`/api/v1/verification-requests/${partial.id}`)).body.assets.map((a: any) => a.status)).toEqual(["verified", "expired"]);
    expect((await t.c.get(`/api/v1/verifications/${partial.assets[0].verification_id}`)).body.status).toBe("verified");
    expect((await t.c.get(`/api/v1/verifications/${partial.assets[1].verification_id}`)).body.status).toBe("expired");
    expectError(await t.c.del(`/api/v1/verification-requests/${partial.id}`), 409, "invalid_state");
  });
});

describe("reading", () => {
  it("lists newest first with pagination and the status and reference_id filters; by-reference answers the newest", async () => {
    const t = await tenant();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await create(t, { assets: [{ type: "email" }], reference_id: "ref-page" })).id);
      clock.advance(10);
    }
    await create(t, { assets: [{ type: "email" }], reference_id: "other" });
    expect((await t.c.del(`/api/v1/verification-requests/${ids[0]}`)).status).toBe(200);

    const p1 = await t.c.get("/api/v1/verification-requests?reference_id=ref-page&limit=2");
    expect(p1.body.data.map((r: any) => r.id)).toEqual([ids[2], ids[1]]);
    expect(p1.body.pagination).toEqual({ page: 1, limit: 2, total: 3, pages: 2, hasMore: true, has_more: true });
    const p2 = await t.c.get("/api/v1/verification-requests?reference_id=ref-page&limit=2&page=2");
    expect(p2.body.data.map((r: any) => r.id)).toEqual([ids[0]]);
    expect(p2.body.pagination.hasMore).toBe(false);
    const cancelled = await t.c.get("/api/v1/verification-requests?status=cancelled");
    expect(cancelled.body.data.map((r: any) => r.id)).toEqual([ids[0]]);
    expect((await t.c.get("/api/v1/verification-requests")).body.pagination.total).toBe(4);
    expectError(await t.c.get("/api/v1/verification-requests?status=done"), 400, "validation_error");
    expectError(await t.c.get("/api/v1/verification-requests?limit=101"), 400, "validation_error");

    expect((await t.c.get("/api/v1/verification-requests/by-reference/ref-page")).body.id).toBe(ids[2]);
    expectError(await t.c.get("/api/v1/verification-requests/by-reference/nothing"), 404, "not_found");
  });

  it("another tenant's or environment's request is not_found", async () => {
    const a = await tenant();
    const b = await tenant();
    const r = await create(a, { assets: [{ type: "email" }], reference_id: "mine" });
    for (const c of [b.c, a.live]) {
      expectError(await c.get(`/api/v1/verification-requests/${r.id}`), 404, "not_found");
      expectError(await c.del(`/api/v1/verification-requests/${r.id}`), 404, "not_found");
      expectError(await c.get("/api/v1/verification-requests/by-reference/mine"), 404, "not_found");
      expect((await c.get("/api/v1/verification-requests")).body.data).toEqual([]);
    }
    expect((await a.c.get(`/api/v1/verification-requests/${r.id}`)).body.status).toBe("pending");
    expectError(await api(stack.url).get(`/api/v1/verification-requests/${r.id}`), 401, "unauthorized");
  });
});

// last: moves the clock
describe("expiry", () => {
  it("expires_at passing first makes it expired (read path and sweeper), sends the event, and cancel is refused", async () => {
    const endpoint = await receiver();
    const t = await tenant(endpoint.url);
    const read = await create(t, {
      assets: [{ type: "phone", identifier: phone(), channel: "telegram" }, { type: "email" }],
      expires_in: 60,
      partial_ok: true,
    });
    const swept = await create(t, { assets: [{ type: "email" }], expires_in: 60 });
    const later = await create(t, { assets: [{ type: "email" }], expires_in: 3600 });
    clock.advance(59_000);
    expect((await t.c.get(`/api/v1/verification-requests/${read.id}`)).body.status).toBe("pending");
    clock.advance(1_000);
    // the sweeper expires what nobody reads
    await eventsWhen(t, endpoint, read.id, 1);
    await eventsWhen(t, endpoint, swept.id, 1);
    const g = (await t.c.get(`/api/v1/verification-requests/${read.id}`)).body;
    expect(g).toMatchObject({ status: "expired", assets: [{ status: "expired" }, { status: "expired" }] });
    expect((await t.c.get(`/api/v1/verifications/${read.assets[0].verification_id}`)).body.status).toBe("expired");
    expect((await t.c.get(`/api/v1/verification-requests/${swept.id}`)).body.status).toBe("expired");
    expect((await t.c.get(`/api/v1/verification-requests/${later.id}`)).body.status).toBe("pending");
    const got = endpoint.requests.map((req) => signed(t, req)).filter((b) => b.request_id);
    expect(got.map((b) => [b.event, b.request_id]).sort()).toEqual(
      [
        ["verification_request.expired", read.id],
        ["verification_request.expired", swept.id],
      ].sort(),
    );
    expect(got[0]).toMatchObject({ status: "expired", proofs: [], test: true });
    expectError(await t.c.del(`/api/v1/verification-requests/${read.id}`), 409, "invalid_state");
    expect((await t.c.get("/api/v1/verification-requests?status=expired")).body.pagination.total).toBe(2);
  });
});
