// GET /api/v1/test/messages: what test verifications would have sent (the code email, with its
// code) or expect from the user (the phone code message), newest first, for test keys only,
// never across tenants.
import { describe, expect, it } from "vitest";
import { ManualClock } from "@icv/platform";
import { api } from "../support/stack.ts";
import { useStack, useTenant } from "../support/use-stack.ts";
import { expectError } from "../support/expect-error.ts";

const clock = new ManualClock(Date.now());
// a configured bot (live creates allowed) whose Bot API is unreachable: nothing here may reach it
const stack = useStack(
  {
    TELEGRAM_BOT_USERNAME: "icv_e2e_bot",
    TELEGRAM_BOT_TOKEN: "7000000001:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0",
    TELEGRAM_WEBHOOK_SECRET: "tg-webhook-secret-0123456789",
    TELEGRAM_API_URL: "http://127.0.0.1:9",
    ALLOW_PRIVATE_TARGETS: "true", // the stand-in is plain http on loopback
  },
  clock,
);
const t = useTenant(stack, "Test messages");

const messages = (key: string, query = "") => api(stack.url, key).get(`/api/v1/test/messages${query}`);

async function create(key: string, body: Record<string, string>) {
  const r = await api(stack.url, key).post("/api/v1/verifications", body);
  expect(r.status, r.text).toBe(201);
  return r.body;
}

describe("test messages", () => {
  it("shows the code email a test email verification would have sent; its code verifies", async () => {
    const v = await create(t.testKey, { type: "email", channel: "email", identifier: "Alice@Example.com" });
    expect(v.challenge.code).toBeUndefined();
    const r = await messages(t.testKey, `?verification_id=${v.id}`);
    expect(r.status, r.text).toBe(200);
    expect(r.body.pagination).toMatchObject({ page: 1, total: 1, hasMore: false });
    const [m] = r.body.data;
    expect(m).toMatchObject({ verification_id: v.id, channel: "email", direction: "outbound", to: "alice@example.com" });
    expect(m.id).toMatch(/^tmsg_/);
    expect(m.from).toBeUndefined();
    expect(m.subject).toMatch(/^Your verification code: [A-Z0-9]{6}$/);
    const code = /verification code is ([A-Z0-9]{6})/.exec(m.text)?.[1];
    expect(code).toBeDefined();
    expect(m.subject).toContain(code);

    const ok = await api(stack.url, t.testKey).post(`/api/v1/verifications/${v.id}/submit`, { challenge_code: code });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.status).toBe("verified");
  });

  it("adds the resent code email on resend; the old code no longer verifies, the new one does", async () => {
    const v = await create(t.testKey, { type: "email", channel: "email", identifier: "resend.tm@example.com" });
    clock.advance(60_000);
    const rs = await api(stack.url, t.testKey).post(`/api/v1/verifications/${v.id}/resend`, {});
    expect(rs.status, rs.text).toBe(200);
    const r = await messages(t.testKey, `?verification_id=${v.id}`);
    expect(r.body.data).toHaveLength(2);
    const [newest, first] = r.body.data;
    expect(newest.subject).toMatch(/^Your new verification code: /);
    expect(newest.text).toMatch(/earlier codes no longer work/);
    expect(Date.parse(newest.created_at) - Date.parse(first.created_at)).toBe(60_000);
    const codeOf = (m: { text: string }) => /verification code is ([A-Z0-9]{6})/.exec(m.text)![1];
    expect(codeOf(newest)).not.toBe(codeOf(first));
    const c = api(stack.url, t.testKey);
    expect((await c.post(`/api/v1/verifications/${v.id}/submit`, { challenge_code: codeOf(first) })).status).toBe(400);
    const ok = await c.post(`/api/v1/verifications/${v.id}/submit`, { challenge_code: codeOf(newest) });
    expect(ok.status, ok.text).toBe(200);
  });

  it("shows the message a test telegram phone verification expects from the user, with the code", async () => {
    const v = await create(t.testKey, { type: "phone", channel: "telegram", identifier: "+37069100021" });
    const r = await messages(t.testKey, `?verification_id=${v.id}`);
    expect(r.body.data).toEqual([
      {
        id: expect.stringMatching(/^tmsg_/),
        verification_id: v.id,
        channel: "telegram",
        direction: "inbound",
        from: "+37069100021",
        to: "@icv_e2e_bot",
        text: `/start ${v.challenge.code}`,
        created_at: v.created_at,
      },
    ]);
    expect(v.challenge.deep_link).toBe(`https://t.me/icv_e2e_bot?start=${v.challenge.code}`);
  });

  it("answers 403 test_mode_required to a live key, and records nothing for live verifications", async () => {
    expectError(await messages(t.liveKey), 403, "test_mode_required");
    const live = await create(t.liveKey, { type: "phone", channel: "telegram", identifier: "+37069100022" });
    const r = await messages(t.testKey, "?limit=100");
    expect(r.body.data.map((m: { verification_id: string }) => m.verification_id)).not.toContain(live.id);
  });

  it("never shows another tenant's messages", async () => {
    const other = await stack.tenant("Test messages other");
    const mine = await messages(t.testKey);
    expect(mine.body.pagination.total).toBeGreaterThan(0);
    const r = await messages(other.testKey);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ data: [], pagination: { page: 1, limit: 20, total: 0, pages: 0, hasMore: false, has_more: false } });
    const id = mine.body.data[0].verification_id;
    expect((await messages(other.testKey, `?verification_id=${id}`)).body.data).toEqual([]);
  });

  it("pages newest first and validates its query", async () => {
    const u = await stack.tenant("Test messages pages");
    const ids: string[] = [];
    for (const [i, channel] of (["sms", "whatsapp", "telegram"] as const).entries()) {
      clock.advance(1_000);
      ids.push((await create(u.testKey, { type: "phone", channel, identifier: `+3706910003${i}` })).id);
    }
    // wallets have no message
    await create(u.testKey, { type: "wallet", channel: "ethereum", identifier: "0x52908400098527886E0F7030069857D2E4169EE7" });
    const p1 = await messages(u.testKey, "?limit=2");
    expect(p1.body.pagination).toEqual({ page: 1, limit: 2, total: 3, pages: 2, hasMore: true, has_more: true });
    expect(p1.body.data.map((m: { verification_id: string }) => m.verification_id)).toEqual([ids[2], ids[1]]);
    const p2 = await messages(u.testKey, "?limit=2&page=2");
    expect(p2.body.pagination).toMatchObject({ page: 2, hasMore: false });
    const [sms] = p2.body.data;
    expect(sms).toMatchObject({ verification_id: ids[0], channel: "sms", direction: "inbound", from: "+37069100030", to: "+15550002000" });
    expect(p1.body.data[1]).toMatchObject({ channel: "whatsapp", to: "+15550001000" });
    expectError(await messages(u.testKey, "?verification_id=nope"), 400, "validation_error");
    expectError(await messages(u.testKey, "?limit=101"), 400, "validation_error");
  });
});
