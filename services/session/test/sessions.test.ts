// Sessions (phone-first and auth) on a real SessionStore, with a ManualClock and a fake of the
// verification service's client: what a tenant sees when it creates and reads a session, what
// test-verify and a message from the phone do to it, and the expiry sweep.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { AppError, type ManualClock, parseConfig, type Scope } from "@icv/platform";
import { AUTH_PROOF_TTL_S, PHONE_PROOF_TTL_S, Sessions, TEST_PHONE } from "../src/sessions.ts";
import type { SessionStore } from "../src/store/sessions.ts";
import { qrSignature, sessionToken } from "../src/tokens.ts";
import { BOT, KEY, T0, WA_NUMBER, type fakeVerification, openStore, type recordingLogger, sessionRig } from "./support.ts";

const LIVE: Scope = { tenantId: "ten_sessions_a", env: "live" };
const TEST: Scope = { tenantId: "ten_sessions_a", env: "test" };
const OTHER: Scope = { tenantId: "ten_sessions_b", env: "live" };
const ME = "+37069199199";
const SOMEONE = "+37069100002";
const MIN = 60_000;

let db: Awaited<ReturnType<typeof openStore>>;
let store: SessionStore;
let clock: ManualClock;
let v: ReturnType<typeof fakeVerification>;
let log: ReturnType<typeof recordingLogger>;
let sessions: Sessions;

beforeAll(async () => {
  db = await openStore();
  store = db.store;
});
afterAll(() => db?.close());
beforeEach(() => {
  ({ clock, v, log, sessions } = sessionRig(store));
});

/** The AppError a call rejects with (fails the test when it resolves). */
async function refusal(p: Promise<unknown>): Promise<AppError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!(e instanceof AppError)) throw new Error(`expected an AppError, got ${String(e)}`);
  return e;
}

describe("create", () => {
  it("a phone-first Telegram session: pending for 10 minutes, a t.me deep link with its token, a signed QR URL, instructions", async () => {
    const s = await sessions.create(LIVE, "phone", { channel: "telegram" });
    const id = s.row.id;
    expect(id).toMatch(/^sess_/);
    expect(s.row).toMatchObject({
      kind: "phone",
      status: "pending",
      channel: "telegram",
      tenant_id: LIVE.tenantId,
      environment: "live",
      phone_number: null,
    });
    expect(s.row.created_at).toEqual(T0);
    expect(s.row.expires_at.getTime() - T0.getTime()).toBe(10 * MIN);
    expect(s.deepLink).toBe(`https://t.me/${BOT}?start=${sessionToken(KEY, id)}`);
    expect(s.qrCode).toBe(`https://icv.example/api/v1/sessions/${id}/qr.png?sig=${qrSignature(KEY, id)}`);
    expect(s.instructions).toContain(`@${BOT}`);
    expect(s.instructions).toContain("share your phone number");
    // live: nothing is recorded as a test message
    expect(v.calls).toEqual([]);
    // the QR URL serves a PNG of the link; a wrong signature finds nothing
    const png = await sessions.qrPng(id, qrSignature(KEY, id));
    expect(png.subarray(1, 4).toString()).toBe("PNG");
    expect((await refusal(sessions.qrPng(id, "x".repeat(22)))).code).toBe("not_found");
  });

  it("an auth WhatsApp session: 5 minutes, the number in E.164, type 2fa by default, a wa.me link pre-filling the token, a QR data URI", async () => {
    const s = await sessions.create(LIVE, "auth", {
      channel: "whatsapp",
      phoneNumber: " 37069199199 ",
      clientMetadata: { ip: "203.0.113.9" },
    });
    const id = s.row.id;
    expect(id).toMatch(/^auth_/);
    expect(s.row).toMatchObject({
      kind: "auth",
      status: "pending",
      phone_number: ME,
      auth_type: "2fa",
      client_metadata: { ip: "203.0.113.9" },
    });
    expect(s.row.expires_at.getTime() - T0.getTime()).toBe(5 * MIN);
    expect(s.deepLink).toBe(`https://wa.me/${WA_NUMBER.slice(1)}?text=${encodeURIComponent(`Confirm sign-in: ${sessionToken(KEY, id)}`)}`);
    expect(s.qrCode).toMatch(/^data:image\/png;base64,[A-Za-z0-9+/=]{100,}$/);
    expect(s.instructions).toContain(WA_NUMBER);
    expect(s.instructions).toContain("confirm this sign-in");
    // read back: the same session, link and QR
    const again = await sessions.get(LIVE, "auth", id);
    expect(again).toMatchObject({ deepLink: s.deepLink, qrCode: s.qrCode, row: { status: "pending", phone_number: ME } });
  });

  it("test mode needs no provider and records the message the user would send, in the test scope", async () => {
    const bare = new Sessions({ store, verification: v.client, config: parseConfig({}), clock, key: KEY, logger: log.logger });
    const s = await bare.create(TEST, "auth", { channel: "telegram", phoneNumber: ME, type: "login" });
    const token = sessionToken(KEY, s.row.id);
    expect(s.deepLink).toBe(`https://t.me/icv_test_bot?start=${token}`);
    expect(v.callsOf("recordTestMessage")).toEqual([
      {
        scope: { tenantId: TEST.tenantId, environment: Environment.TEST, requestId: "" },
        sessionId: s.row.id,
        channel: "telegram",
        direction: "inbound",
        from: ME,
        to: "@icv_test_bot",
        text: `/start ${token}`,
      },
    ]);
    // a live session on a channel whose provider is not configured is refused
    const e = await refusal(bare.create(LIVE, "phone", { channel: "whatsapp" }));
    expect(e.code).toBe("channel_unavailable");
    expect(e.message).toContain("WHATSAPP_ACCESS_TOKEN");
  });

  it("refuses a bad channel, a missing or invalid phone, an unknown type and oversized client_metadata", async () => {
    const cases: [Promise<unknown>, string, string | undefined][] = [
      [sessions.create(LIVE, "phone", { channel: "signal" }), "validation_error", "channel"],
      [sessions.create(LIVE, "auth", { channel: "telegram" }), "validation_error", "phone_number"],
      [sessions.create(LIVE, "auth", { channel: "telegram", phoneNumber: "+1234" }), "invalid_identifier", undefined],
      [sessions.create(LIVE, "auth", { channel: "telegram", phoneNumber: ME, type: "signup" }), "validation_error", "type"],
      [sessions.create(LIVE, "phone", { channel: "telegram", projectId: "prj_unknown" }), "validation_error", "project_id"],
    ];
    for (const [p, code, field] of cases) {
      const e = await refusal(p);
      expect(e.code).toBe(code);
      expect(e.details?.[0]?.field).toBe(field);
    }
    // client_metadata: 4 KB of JSON is the limit, to the byte
    const meta = (n: number) => ({ n: "x".repeat(n - 8) }); // {"n":"…"} is n bytes
    expect((await refusal(sessions.create(LIVE, "phone", { channel: "telegram", clientMetadata: meta(4097) }))).code).toBe("validation_error");
    const ok = await sessions.create(LIVE, "phone", { channel: "telegram", clientMetadata: meta(4096) });
    expect((await sessions.get(LIVE, "phone", ok.row.id)).row.client_metadata).toEqual(meta(4096));
  });
});

describe("read back", () => {
  it("a session is found only in its own tenant, mode and kind", async () => {
    const { row } = await sessions.create(LIVE, "phone", { channel: "telegram" });
    expect((await sessions.get(LIVE, "phone", row.id)).row.id).toBe(row.id);
    for (const [scope, kind] of [
      [OTHER, "phone"],
      [TEST, "phone"],
      [LIVE, "auth"],
    ] as const) {
      expect((await refusal(sessions.get(scope, kind, row.id))).code).toBe("not_found");
    }
  });

  it("a pending session read after its lifetime is expired, without a link or QR code", async () => {
    const { row } = await sessions.create(LIVE, "phone", { channel: "whatsapp" });
    clock.advance(10 * MIN - 1);
    expect((await sessions.get(LIVE, "phone", row.id)).row.status).toBe("pending");
    clock.advance(1);
    const s = await sessions.get(LIVE, "phone", row.id);
    expect(s.row.status).toBe("expired");
    expect(s.deepLink).toBeUndefined();
    expect(s.qrCode).toBeUndefined();
    expect((await refusal(sessions.qrPng(row.id, qrSignature(KEY, row.id)))).code).toBe("not_found");
  });
});

describe("test-verify", () => {
  it("is refused for a live session, which stays pending", async () => {
    const { row } = await sessions.create(LIVE, "phone", { channel: "telegram" });
    expect((await refusal(sessions.testVerify(LIVE, "phone", row.id))).code).toBe("test_mode_required");
    expect((await sessions.get(LIVE, "phone", row.id)).row.status).toBe("pending");
    expect(v.callsOf("recordSessionVerification")).toEqual([]);
  });

  it("verifies a test phone-first session with the test number and a 30-day proof; a retry answers the same, another number is refused", async () => {
    const { row } = await sessions.create(TEST, "phone", { channel: "whatsapp", clientMetadata: { order: 7 } });
    clock.advance(MIN);
    const s = await sessions.testVerify(TEST, "phone", row.id);
    expect(s.row).toMatchObject({ status: "verified", phone_number: TEST_PHONE, verification_id: "ver_1", proof_token: "proof-of-ver_1" });
    expect(s.row.verified_at).toEqual(clock.now());
    expect(s.row.proof_expires_at!.getTime() - clock.now().getTime()).toBe(PHONE_PROOF_TTL_S * 1000);
    expect(v.callsOf("recordSessionVerification")).toEqual([
      {
        scope: { tenantId: TEST.tenantId, environment: Environment.TEST, requestId: "" },
        channel: "whatsapp",
        phoneNumber: TEST_PHONE,
        origin: row.id,
        proofExpiresIn: PHONE_PROOF_TTL_S,
        clientMetadata: { order: 7 },
        projectId: undefined,
      },
    ]);
    expect((await sessions.testVerify(TEST, "phone", row.id)).row.verification_id).toBe("ver_1");
    expect(v.callsOf("recordSessionVerification")).toHaveLength(1);
    expect((await refusal(sessions.testVerify(TEST, "phone", row.id, SOMEONE))).code).toBe("invalid_state");
  });

  it("an auth session is verified by its own number with a 10-minute proof, and fails when another number answers", async () => {
    const mine = await sessions.create(TEST, "auth", { channel: "telegram", phoneNumber: ME });
    const s = await sessions.testVerify(TEST, "auth", mine.row.id);
    expect(s.row).toMatchObject({ status: "verified", phone_number: ME });
    expect(s.row.proof_expires_at!.getTime() - T0.getTime()).toBe(AUTH_PROOF_TTL_S * 1000);

    const other = await sessions.create(TEST, "auth", { channel: "telegram", phoneNumber: ME });
    const f = await sessions.testVerify(TEST, "auth", other.row.id, SOMEONE);
    expect(f.row).toMatchObject({ status: "failed", phone_number: ME, verification_id: null });
    expect(f.row.failed_at).toEqual(T0);
    expect(v.callsOf("recordSessionVerification")).toHaveLength(1);
  });

  it("an expired test session cannot be verified", async () => {
    const { row } = await sessions.create(TEST, "auth", { channel: "whatsapp", phoneNumber: ME });
    clock.advance(5 * MIN);
    expect((await refusal(sessions.testVerify(TEST, "auth", row.id))).code).toBe("challenge_expired");
    expect((await sessions.get(TEST, "auth", row.id)).row.status).toBe("expired");
  });
});

describe("a message from the phone", () => {
  it("verifies a live phone-first session with the sender's number, over its own channel only", async () => {
    const { row } = await sessions.create(LIVE, "phone", { channel: "telegram" });
    const token = sessionToken(KEY, row.id);
    expect(await sessions.isOpen(token, "telegram")).toBe(true);
    expect(await sessions.answerToken(token, "whatsapp", SOMEONE)).toBe("unknown");
    expect(await sessions.answerToken(token, "telegram", SOMEONE)).toBe("verified");
    const s = await sessions.get(LIVE, "phone", row.id);
    expect(s.row).toMatchObject({ status: "verified", phone_number: SOMEONE, verification_id: "ver_1" });
    expect(v.callsOf("recordSessionVerification")[0]).toMatchObject({
      scope: { tenantId: LIVE.tenantId, environment: Environment.LIVE },
      channel: "telegram",
      phoneNumber: SOMEONE,
      origin: row.id,
    });
    // again from the same number: already verified; from another: it can no longer be used
    expect(await sessions.answerToken(token, "telegram", SOMEONE)).toBe("already_verified");
    expect(await sessions.answerToken(token, "telegram", ME)).toBe("not_pending");
    expect(await sessions.isOpen(token, "telegram")).toBe(false);
    expect((await sessions.get(LIVE, "phone", row.id)).row.phone_number).toBe(SOMEONE);
    // the log names the session, never the number or the token
    const logged = JSON.stringify(log.lines);
    expect(logged).toContain(row.id);
    expect(logged).not.toContain(SOMEONE.slice(1));
    expect(logged).not.toContain(token);
  });

  it("an auth session answered by another number fails without a verification; its own number can then not verify it", async () => {
    const { row } = await sessions.create(LIVE, "auth", { channel: "whatsapp", phoneNumber: ME });
    const token = sessionToken(KEY, row.id);
    expect(await sessions.answerToken(token, "whatsapp", SOMEONE)).toBe("wrong_sender");
    expect((await sessions.get(LIVE, "auth", row.id)).row).toMatchObject({ status: "failed", verification_id: null });
    expect(await sessions.answerToken(token, "whatsapp", ME)).toBe("not_pending");
    expect(v.callsOf("recordSessionVerification")).toEqual([]);
  });

  it("an auth session answered by its own number is verified with a 10-minute proof", async () => {
    const { row } = await sessions.create(LIVE, "auth", { channel: "whatsapp", phoneNumber: ME, type: "recovery" });
    clock.advance(5 * MIN - 1);
    expect(await sessions.answerToken(sessionToken(KEY, row.id), "whatsapp", ME)).toBe("verified");
    const s = await sessions.get(LIVE, "auth", row.id);
    expect(s.row).toMatchObject({ status: "verified", phone_number: ME, auth_type: "recovery" });
    expect(v.callsOf("recordSessionVerification")[0]).toMatchObject({ proofExpiresIn: AUTH_PROOF_TTL_S, phoneNumber: ME });
  });

  it("after its lifetime an answer expires the session instead of verifying it", async () => {
    const { row } = await sessions.create(LIVE, "auth", { channel: "telegram", phoneNumber: ME });
    clock.advance(5 * MIN);
    expect(await sessions.isOpen(sessionToken(KEY, row.id), "telegram")).toBe(false);
    expect(await sessions.answerToken(sessionToken(KEY, row.id), "telegram", ME)).toBe("expired");
    expect((await sessions.get(LIVE, "auth", row.id)).row.status).toBe("expired");
    expect(v.callsOf("recordSessionVerification")).toEqual([]);
  });

  it("a test session and an unknown token do not answer to provider messages", async () => {
    const { row } = await sessions.create(TEST, "phone", { channel: "telegram" });
    expect(await sessions.answerToken(sessionToken(KEY, row.id), "telegram", ME)).toBe("unknown");
    expect(await sessions.answerToken(sessionToken(KEY, "sess_nope"), "telegram", ME)).toBe("unknown");
    expect((await sessions.get(TEST, "phone", row.id)).row.status).toBe("pending");
    expect(v.callsOf("recordSessionVerification")).toEqual([]);
  });

  it("two numbers answering at once: one verifies it, the other is told it can no longer be used", async () => {
    const { row } = await sessions.create(LIVE, "phone", { channel: "whatsapp" });
    const token = sessionToken(KEY, row.id);
    const outcomes = await Promise.all([sessions.answerToken(token, "whatsapp", ME), sessions.answerToken(token, "whatsapp", SOMEONE)]);
    expect([...outcomes].sort()).toEqual(["not_pending", "verified"]);
    const winner = outcomes[0] === "verified" ? ME : SOMEONE;
    expect((await sessions.get(LIVE, "phone", row.id)).row).toMatchObject({ status: "verified", phone_number: winner });
  });
});

describe("expireDue", () => {
  it("moves only pending sessions past their expiry to expired", async () => {
    clock.advance(24 * 60 * MIN); // after every other test's sessions: sweep those first
    await sessions.expireDue();
    const phone = await sessions.create(LIVE, "phone", { channel: "telegram" });
    const auth = await sessions.create(LIVE, "auth", { channel: "telegram", phoneNumber: ME });
    const done = await sessions.create(LIVE, "auth", { channel: "telegram", phoneNumber: ME });
    expect(await sessions.answerToken(sessionToken(KEY, done.row.id), "telegram", ME)).toBe("verified");
    const status = async () =>
      Promise.all([store.byId(phone.row.id), store.byId(auth.row.id), store.byId(done.row.id)]).then((rows) => rows.map((r) => r!.status));
    clock.advance(5 * MIN - 1);
    expect(await sessions.expireDue()).toBe(0);
    clock.advance(1);
    expect(await sessions.expireDue()).toBe(1);
    expect(await status()).toEqual(["pending", "expired", "verified"]);
    clock.advance(5 * MIN);
    expect(await sessions.expireDue()).toBe(1);
    expect(await status()).toEqual(["expired", "expired", "verified"]);
  });
});
