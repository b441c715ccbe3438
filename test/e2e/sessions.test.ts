// Phone-first sessions and auth sessions through the public API with test keys (nothing is sent):
// creation with deep links and QR codes (decoded back), test-verify, the proof a session yields,
// failure by another number, expiry with a hand-moved clock, isolation and the live-key rules.
import jsQRModule from "jsqr";
import { PNG } from "pngjs";
import { decodeJwt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "@icv/platform";
import { api, startStack, type Stack, type TenantKeys } from "../support/stack.ts";
import { expectError } from "../support/expect-error.ts";

let stack: Stack;
let t: TenantKeys;
let test: ReturnType<typeof api>;
let live: ReturnType<typeof api>;
const clock = new ManualClock(Date.now());

beforeAll(async () => {
  stack = await startStack({ SWEEP_INTERVAL_MS: "100" }, clock);
  t = await stack.tenant("Sessions");
  test = api(stack.url, t.testKey);
  live = api(stack.url, t.liveKey);
});
afterAll(() => stack?.close());

// jsqr is CommonJS with an ES-style default export: take the function whichever way it arrives
const jsQR = ((jsQRModule as unknown as { default?: unknown }).default ?? jsQRModule) as (
  data: Uint8ClampedArray,
  w: number,
  h: number,
) => { data: string } | null;

/** Reads the QR code in a PNG back to its text. */
function decodeQr(png: Buffer): string | undefined {
  const img = PNG.sync.read(png);
  return jsQR(new Uint8ClampedArray(img.data.buffer, img.data.byteOffset, img.data.length), img.width, img.height)?.data;
}

describe("phone-first sessions (test key)", () => {
  it("creates a Telegram session with a deep link, instructions and a QR code URL that serves a PNG of that link", async () => {
    const r = await test.post("/api/v1/sessions", { channel: "telegram", client_metadata: { cart: "c-1" } });
    expect(r.status, r.text).toBe(201);
    expect(r.body).toMatchObject({ channel: "telegram", status: "pending", test_mode: true });
    expect(r.body.id).toMatch(/^sess_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(r.body.deep_link).toMatch(/^https:\/\/t\.me\/icv_test_bot\?start=[A-Za-z0-9_-]{22}$/);
    expect(r.body.instructions).toContain("@icv_test_bot");
    expect(Date.parse(r.body.expires_at) - clock.now().getTime()).toBe(10 * 60_000);
    expect(r.body.phone_number).toBeUndefined();
    expect(r.body.proof).toBeUndefined();

    const qrUrl = new URL(r.body.qr_code);
    expect(qrUrl.pathname).toBe(`/api/v1/sessions/${r.body.id}/qr.png`);
    // public: an <img> in the tenant's page loads it without the API key
    const png = await fetch(`${stack.url}${qrUrl.pathname}${qrUrl.search}`);
    expect(png.status).toBe(200);
    expect(png.headers.get("content-type")).toBe("image/png");
    expect(decodeQr(Buffer.from(await png.arrayBuffer()))).toBe(r.body.deep_link);

    // the id alone (or a forged signature) does not reach the image
    expectError(await api(stack.url).get(`/api/v1/sessions/${r.body.id}/qr.png?sig=AAAAAAAAAAAAAAAAAAAAAA`), 404, "not_found");
    expectError(await api(stack.url).get(`/api/v1/sessions/${r.body.id}/qr.png`), 400, "validation_error");

    const got = await test.get(`/api/v1/sessions/${r.body.id}`);
    expect(got.body).toMatchObject({
      id: r.body.id,
      status: "pending",
      deep_link: r.body.deep_link,
      qr_code: r.body.qr_code,
      client_metadata: { cart: "c-1" },
    });
  });

  it("creates a WhatsApp session whose link pre-fills the message with the session token", async () => {
    const r = await test.post("/api/v1/sessions", { channel: "whatsapp" });
    expect(r.status).toBe(201);
    const link = new URL(r.body.deep_link);
    expect(link.origin + link.pathname).toBe("https://wa.me/15550001000");
    expect(link.searchParams.get("text")).toMatch(/^Verify my phone number: [A-Za-z0-9_-]{22}$/);
  });

  it("test-verify completes it with +15555550100 by default: a verified phone verification and its proof", async () => {
    const s = (await test.post("/api/v1/sessions", { channel: "telegram", client_metadata: { cart: "c-2" } })).body;
    const r = await test.post(`/api/v1/sessions/${s.id}/test-verify`);
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ id: s.id, status: "verified", phone_number: "+15555550100", test_mode: true });
    expect(r.body.verification_id).toMatch(/^ver_/);
    expect(r.body.deep_link).toBeUndefined();
    expect(r.body.qr_code).toBeUndefined();
    const claims = decodeJwt(r.body.proof.token);
    expect(claims).toMatchObject({ sub: r.body.verification_id, type: "phone", channel: "telegram", env: "test" });

    // the verification exists on its own, verified, with the same proof and the session's metadata
    const v = await test.get(`/api/v1/verifications/${r.body.verification_id}`);
    expect(v.body).toMatchObject({
      type: "phone",
      channel: "telegram",
      identifier: "+15555550100",
      status: "verified",
      client_metadata: { cart: "c-2" },
    });
    expect(v.body.proof.token).toBe(r.body.proof.token);
    const valid = await test.post("/api/v1/proofs/validate", { proof_token: r.body.proof.token, identifier: "+1 555 555 0100" });
    expect(valid.body).toMatchObject({ valid: true });

    // polling shows the same; a repeated test-verify answers the same session (no second verification)
    expect((await test.get(`/api/v1/sessions/${s.id}`)).body).toMatchObject({
      status: "verified",
      verification_id: r.body.verification_id,
    });
    const again = await test.post(`/api/v1/sessions/${s.id}/test-verify`);
    expect(again.body.verification_id).toBe(r.body.verification_id);
    const list = await test.get("/api/v1/verifications?channel=telegram&type=phone&limit=100");
    expect(list.body.data.filter((x: { id: string }) => x.id === r.body.verification_id)).toHaveLength(1);
  });

  it("emits the verification's events like test-verify does (status_changed and verification.completed over SSE replay)", async () => {
    const s = (await test.post("/api/v1/sessions", { channel: "whatsapp" })).body;
    const r = await test.post(`/api/v1/sessions/${s.id}/test-verify`, { phone_number: "+37069100077" });
    expect(r.body.phone_number).toBe("+37069100077");
    const res = await fetch(`${stack.url}/api/v1/verifications/${r.body.verification_id}/events`, {
      headers: { authorization: `Bearer ${t.testKey}`, "last-event-id": "evt_00000000000000000000000000" },
    });
    const reader = res.body!.getReader();
    let text = "";
    while (!text.includes("event: status_changed")) text += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    expect(text).toMatch(/"status":"verified","previous_status":"pending"/);
  });

  it("test-verify answers test_mode_required for a live key, and bad numbers are invalid_identifier", async () => {
    const s = (await test.post("/api/v1/sessions", { channel: "telegram" })).body;
    expectError(await test.post(`/api/v1/sessions/${s.id}/test-verify`, { phone_number: "call me" }), 400, "invalid_identifier");
    expectError(await live.post(`/api/v1/sessions/${s.id}/test-verify`), 403, "test_mode_required");
    expectError(await test.post("/api/v1/sessions", { channel: "email" }), 400, "validation_error");
    expectError(await test.post("/api/v1/sessions", { channel: "telegram", phone_number: "+37069100077" }), 400, "validation_error");
  });

  it("expires after 10 minutes: GET shows expired at once, and test-verify is refused", async () => {
    const a = (await test.post("/api/v1/sessions", { channel: "telegram" })).body;
    clock.advance(10 * 60_000 - 1_000);
    expect((await test.get(`/api/v1/sessions/${a.id}`)).body.status).toBe("pending");
    clock.advance(1_000);
    const got = await test.get(`/api/v1/sessions/${a.id}`);
    expect(got.body.status).toBe("expired");
    expect(got.body.deep_link).toBeUndefined();
    expect(got.body.qr_code).toBeUndefined();
    expectError(await test.post(`/api/v1/sessions/${a.id}/test-verify`), 400, "challenge_expired");
    // the QR image of an expired session is gone too
    expectError(await api(stack.url).get(`${new URL(a.qr_code).pathname}${new URL(a.qr_code).search}`), 404, "not_found");
  });
});

describe("auth sessions (test key)", () => {
  it("creates a 2FA session by default with a QR data URI of the deep link and a 5-minute life", async () => {
    const r = await test.post("/api/v1/auth/sessions", { channel: "whatsapp", phone_number: "+370 691 99199" });
    expect(r.status, r.text).toBe(201);
    expect(r.body).toMatchObject({ type: "2fa", channel: "whatsapp", status: "pending", phone_number: "+37069199199", test_mode: true });
    expect(r.body.id).toMatch(/^auth_/);
    expect(Date.parse(r.body.expires_at) - clock.now().getTime()).toBe(5 * 60_000);
    expect(r.body.qr_code).toMatch(/^data:image\/png;base64,/);
    expect(decodeQr(Buffer.from(r.body.qr_code.split(",")[1], "base64"))).toBe(r.body.deep_link);
    expect(new URL(r.body.deep_link).searchParams.get("text")).toMatch(/^Confirm sign-in: [A-Za-z0-9_-]{22}$/);
  });

  it("verifies when its own number answers, with a proof that lives 10 minutes", async () => {
    const s = (await test.post("/api/v1/auth/sessions", { channel: "telegram", phone_number: "+37069199199", type: "login" })).body;
    expect(s.deep_link).toMatch(/^https:\/\/t\.me\/icv_test_bot\?start=/);
    const r = await test.post(`/api/v1/auth/sessions/${s.id}/test-verify`);
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ type: "login", status: "verified", phone_number: "+37069199199" });
    const claims = decodeJwt(r.body.proof.token);
    expect(claims.exp! - claims.iat!).toBe(600);
    expect(Math.abs(Date.parse(r.body.proof.expires_at) - Date.parse(r.body.verified_at) - 600_000)).toBeLessThan(1_000);
  });

  it("fails when another number answers, and stays failed", async () => {
    const s = (await test.post("/api/v1/auth/sessions", { channel: "whatsapp", phone_number: "+37069199199", type: "recovery" })).body;
    const r = await test.post(`/api/v1/auth/sessions/${s.id}/test-verify`, { phone_number: "+37069100001" });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: "failed", phone_number: "+37069199199" });
    expect(r.body.failed_at).toBeDefined();
    expect(r.body.proof).toBeUndefined();
    expectError(await test.post(`/api/v1/auth/sessions/${s.id}/test-verify`), 409, "invalid_state");
    expect((await test.get(`/api/v1/auth/sessions/${s.id}`)).body.status).toBe("failed");
  });

  it("validates its body: phone_number required and valid, type and channel from their lists", async () => {
    expectError(await test.post("/api/v1/auth/sessions", { channel: "whatsapp" }), 400, "validation_error");
    expectError(await test.post("/api/v1/auth/sessions", { channel: "whatsapp", phone_number: "12" }), 400, "invalid_identifier");
    expectError(await test.post("/api/v1/auth/sessions", { channel: "whatsapp", phone_number: "+37069199199", type: "payment" }), 400, "validation_error");
    expectError(await test.post("/api/v1/auth/sessions", { channel: "email", phone_number: "+37069199199" }), 400, "validation_error");
  });
});

describe("sessions across tenants, kinds and keys", () => {
  it("answers 404 for another tenant's session and for the other environment; an id of the other kind is 400", async () => {
    const s = (await test.post("/api/v1/sessions", { channel: "telegram" })).body;
    const a = (await test.post("/api/v1/auth/sessions", { channel: "telegram", phone_number: "+37069199199" })).body;
    const other = await stack.tenant("Other");
    expectError(await api(stack.url, other.testKey).get(`/api/v1/sessions/${s.id}`), 404, "not_found");
    expectError(await api(stack.url, other.testKey).post(`/api/v1/auth/sessions/${a.id}/test-verify`), 404, "not_found");
    // a sess_ id is not an auth session id (and the reverse): refused by its shape before any lookup
    expectError(await test.get(`/api/v1/auth/sessions/${s.id}`), 400, "validation_error");
    expectError(await test.get(`/api/v1/sessions/${a.id}`), 400, "validation_error");
    expectError(await live.get(`/api/v1/sessions/${s.id}`), 404, "not_found");
  });

  it("a live create without the provider configured is channel_unavailable, naming what is missing", async () => {
    const e = expectError(await live.post("/api/v1/sessions", { channel: "whatsapp" }), 400, "channel_unavailable");
    expect(e.message).toContain("WHATSAPP_APP_SECRET");
    const e2 = expectError(await live.post("/api/v1/auth/sessions", { channel: "telegram", phone_number: "+37069199199" }), 400, "channel_unavailable");
    expect(e2.message).toContain("TELEGRAM_BOT_TOKEN");
  });

  it("lists each test session's expected message in GET /test/messages, newest first", async () => {
    const s = (await test.post("/api/v1/sessions", { channel: "telegram" })).body;
    const a = (await test.post("/api/v1/auth/sessions", { channel: "whatsapp", phone_number: "+37069199199" })).body;
    const r = await test.get("/api/v1/test/messages?limit=2");
    expect(r.status).toBe(200);
    const [first, second] = r.body.data;
    expect(first).toMatchObject({ session_id: a.id, channel: "whatsapp", direction: "inbound", from: "+37069199199", to: "+15550001000" });
    expect(first.text).toBe(new URL(a.deep_link).searchParams.get("text"));
    expect(first.verification_id).toBeUndefined();
    expect(second).toMatchObject({ session_id: s.id, channel: "telegram", direction: "inbound", to: "@icv_test_bot" });
    expect(second.text).toBe(`/start ${new URL(s.deep_link).searchParams.get("start")}`);
    expect(second.from).toBeUndefined();
  });
});
