// Phone verification and sessions over the messaging providers, with live keys, against local
// servers that speak the Telegram Bot API, the WhatsApp Cloud API and Twilio's REST API. The test
// plays the user: it sends the code (signed as each provider signs its webhooks) from the right
// number, from a wrong one, too late, twice; shares a contact that is not the sender's; sends a
// badly signed hook. The production clients run unchanged against the stand-ins.
import { decodeJwt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "@icv/platform";
import { api, startStack, type Stack, type TenantKeys } from "../support/stack.ts";
import { expectError, waitFor } from "../support/expect-error.ts";
import { startMessagingProviders, startTelegramApi, type TelegramApi, type TwilioApi, type WhatsAppApi } from "../support/providers.ts";

const PUBLIC = "https://verify.example.test";
const TG = { token: "7000000001:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0", bot: "icv_e2e_bot", secret: "tg-webhook-secret-0123456789" };
const WA = {
  phoneNumberId: "1098765432",
  accessToken: "EAAG-e2e-access-token-0123",
  appSecret: "wa-app-secret-0123456789",
  verifyToken: "wa-verify-token-0123456789",
  number: "+15550001234",
};
const TW = { sid: "AC0123456789abcdef0123456789abcdef", token: "twilio-auth-token-0123456789", number: "+15550002000" };

let tg: TelegramApi;
let wa: WhatsAppApi;
let tw: TwilioApi;
let stack: Stack;
let t: TenantKeys;
let live: ReturnType<typeof api>;
const clock = new ManualClock(Date.now());
const hook = (p: string) => `${stack.url}/hooks/${p}`;

beforeAll(async () => {
  let env: Record<string, string>;
  ({ tg, wa, tw, env } = await startMessagingProviders({ tg: TG, wa: WA, tw: TW }));
  stack = await startStack(
    {
      PUBLIC_BASE_URL: PUBLIC,
      ...env,
    },
    clock,
  );
  t = await stack.tenant("Messaging");
  live = api(stack.url, t.liveKey);
});
afterAll(async () => {
  await stack?.close();
  await Promise.all([tg?.close(), wa?.close(), tw?.close()]);
});

async function createPhone(channel: "whatsapp" | "telegram" | "sms", identifier: string) {
  const r = await live.post("/api/v1/verifications", { type: "phone", channel, identifier });
  expect(r.status, r.text).toBe(201);
  expect(r.body.challenge.code).toMatch(/^[A-Z0-9]{6}$/);
  return r.body as { id: string; identifier: string; challenge: { code: string; deep_link: string } };
}
const getV = async (id: string) => (await live.get(`/api/v1/verifications/${id}`)).body;

/** The verification's events as its SSE stream replays them (all of them, from the start). */
async function eventsOf(id: string): Promise<string> {
  const res = await fetch(`${stack.url}/api/v1/verifications/${id}/events`, {
    headers: { authorization: `Bearer ${t.liveKey}`, "last-event-id": "evt_00000000000000000000000000" },
  });
  const reader = res.body!.getReader();
  let text = "";
  while (!/"status":"verified","previous_status":"pending"/.test(text)) {
    const { value, done } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  await reader.cancel();
  return text;
}

describe("WhatsApp (Cloud API)", () => {
  it("answers Meta's subscription handshake only with the verify token", async () => {
    const ok = await wa.verifyHook(hook("whatsapp"), WA.verifyToken);
    expect(ok.status).toBe(200);
    expect(ok.body).toBe(ok.challenge);
    expect((await wa.verifyHook(hook("whatsapp"), "not-the-verify-token")).status).toBe(403);
  });

  it("verifies when the code arrives from the verification's number, with its proof and events, and replies", async () => {
    const v = await createPhone("whatsapp", "+370 691 00001");
    expect(v.challenge.deep_link).toBe(`https://wa.me/15550001234?text=${v.challenge.code}`);
    const sentBefore = wa.sent.length;
    const r = await wa.userSends(hook("whatsapp"), { from: "37069100001", text: v.challenge.code, id: "wamid.right-number-1" });
    expect(r.status).toBe(200);

    const got = await getV(v.id);
    expect(got).toMatchObject({ status: "verified", test_mode: false });
    expect(got.proof.token.split(".")).toHaveLength(3);
    expect((await live.post("/api/v1/proofs/validate", { proof_token: got.proof.token, identifier: "+37069100001" })).body.valid).toBe(true);
    expect([got.method, decodeJwt(got.proof.token).method]).toEqual(["reverse_otp", "reverse_otp"]); // the phone itself sent the code
    expect(await eventsOf(v.id)).toMatch(/"status":"verified","previous_status":"pending"/);

    const reply = await wa.waitForSent((m) => m.to === "37069100001");
    expect(reply.text).toMatch(/verified/i);
    expect(reply.authorization).toBe(`Bearer ${WA.accessToken}`);

    // WhatsApp retries a delivery it thinks failed: the same message changes nothing and is not answered twice
    const again = await wa.userSends(hook("whatsapp"), { from: "37069100001", text: v.challenge.code, id: "wamid.right-number-1" });
    expect(again.status).toBe(200);
    await new Promise((res) => setTimeout(res, 200));
    expect(wa.sent.length).toBe(sentBefore + 1);
    expect((await getV(v.id)).proof.token).toBe(got.proof.token);
  });

  it("counts a known code from another number as a failed attempt, and the fifth fails the verification", async () => {
    const v = await createPhone("whatsapp", "+37069100002");
    const first = await wa.userSends(hook("whatsapp"), { from: "37069100003", text: v.challenge.code });
    expect(first.status).toBe(200);
    expect(await getV(v.id)).toMatchObject({ status: "pending", attempts: 1 });
    expect((await wa.waitForSent((m) => m.to === "37069100003")).text).toMatch(/different phone number.*4 tries left/);
    for (let i = 0; i < 4; i++) await wa.userSends(hook("whatsapp"), { from: "37069100003", text: v.challenge.code });
    expect(await getV(v.id)).toMatchObject({ status: "failed", attempts: 5 });
    // the right number is too late now
    await wa.userSends(hook("whatsapp"), { from: "37069100002", text: v.challenge.code });
    expect((await getV(v.id)).status).toBe("failed");
  });

  it("refuses unsigned and badly signed hooks with 401 and changes nothing", async () => {
    const v = await createPhone("whatsapp", "+37069100004");
    const bad = await wa.userSends(hook("whatsapp"), { from: "37069100004", text: v.challenge.code }, { signWith: "someone-elses-secret" });
    expect(bad.status).toBe(401);
    expect(JSON.parse(bad.body).error.code).toBe("unauthorized");
    const unsigned = await wa.userSends(hook("whatsapp"), { from: "37069100004", text: v.challenge.code }, { signWith: null });
    expect(unsigned.status).toBe(401);
    expect(await getV(v.id)).toMatchObject({ status: "pending", attempts: 0 });
    // bodies past 256 KB are refused before anything reads them
    const huge = await fetch(hook("whatsapp"), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "x".repeat(300_000),
    });
    expect(huge.status).toBe(413);
    expect(((await huge.json()) as { error: { code: string; message: string } }).error).toMatchObject({
      code: "payload_too_large",
      message: expect.stringContaining("256 KB"),
    });
  });

  it("a code sent after the challenge expired does not verify, and the user is told", async () => {
    const v = await createPhone("whatsapp", "+37069100005");
    clock.advance(10 * 60_000);
    await wa.userSends(hook("whatsapp"), { from: "37069100005", text: v.challenge.code });
    expect((await getV(v.id)).status).toBe("expired");
    expect((await wa.waitForSent((m) => m.to === "37069100005")).text).toMatch(/expired/);
  });

  it("a phone-first session captures the number the pre-filled message comes from", async () => {
    const s = (await live.post("/api/v1/sessions", { channel: "whatsapp", client_metadata: { signup: "s-1" } })).body;
    expect(s.test_mode).toBe(false);
    const text = new URL(s.deep_link).searchParams.get("text")!;
    expect(new URL(s.deep_link).pathname).toBe("/15550001234");
    expect((await wa.userSends(hook("whatsapp"), { from: "37069100006", text })).status).toBe(200);
    const got = (await live.get(`/api/v1/sessions/${s.id}`)).body;
    expect(got).toMatchObject({ status: "verified", phone_number: "+37069100006" });
    expect((await getV(got.verification_id)).proof.token).toBe(got.proof.token);
    expect((await wa.waitForSent((m) => m.to === "37069100006")).text).toMatch(/confirmed/i);
  });

  it("an auth session answered from another number fails; from its own number it verifies", async () => {
    const other = (await live.post("/api/v1/auth/sessions", { channel: "whatsapp", phone_number: "+37069100007", type: "login" })).body;
    await wa.userSends(hook("whatsapp"), { from: "37069100008", text: new URL(other.deep_link).searchParams.get("text")! });
    expect((await live.get(`/api/v1/auth/sessions/${other.id}`)).body).toMatchObject({ status: "failed", phone_number: "+37069100007" });

    const own = (await live.post("/api/v1/auth/sessions", { channel: "whatsapp", phone_number: "+37069100007" })).body;
    await wa.userSends(hook("whatsapp"), { from: "37069100007", text: new URL(own.deep_link).searchParams.get("text")! });
    const got = (await live.get(`/api/v1/auth/sessions/${own.id}`)).body;
    expect(got).toMatchObject({ status: "verified", type: "2fa" });
    expect(Date.parse(got.proof.expires_at) - clock.now().getTime()).toBeLessThanOrEqual(600_000);
  });
});

describe("Telegram (Bot API, webhook mode)", () => {
  const user = { userId: 880001, firstName: "Ona" };

  it("registered its webhook at start with the secret token", async () => {
    await waitFor(async () => tg.webhook, 5_000);
    expect(tg.webhook).toMatchObject({ url: `${PUBLIC}/hooks/telegram`, secret: TG.secret, allowedUpdates: ["message"] });
  });

  it("asks for the contact after /start <code>, ignores someone else's contact, verifies with the user's own", async () => {
    const v = await createPhone("telegram", "+37069100010");
    expect(v.challenge.deep_link).toBe(`https://t.me/${TG.bot}?start=${v.challenge.code}`);
    expect((await tg.userSends(hook("telegram"), tg.textUpdate(user, `/start ${v.challenge.code}`))).status).toBe(200);
    const ask = await tg.waitForSent((c) => c.method === "sendMessage" && c.body.chat_id === user.userId);
    expect(JSON.stringify(ask.body.reply_markup)).toContain('"request_contact":true');

    const n = tg.sent.length;
    await tg.userSends(hook("telegram"), tg.contactUpdate(user, "+37069100010", 990099));
    expect((await getV(v.id)).status).toBe("pending");
    await waitFor(async () => tg.sent.length > n, 2_000);
    expect(String(tg.sent[n].body.text)).toMatch(/your own phone number/);

    await tg.userSends(hook("telegram"), tg.contactUpdate(user, "37069100010"));
    const got = await getV(v.id);
    expect(got.status).toBe("verified");
    expect(await eventsOf(v.id)).toMatch(/"status":"verified","previous_status":"pending"/);
    const done = await tg.waitForSent((c) => c.method === "sendMessage" && /verified/.test(String(c.body.text)));
    expect(done.body.reply_markup).toMatchObject({ remove_keyboard: true });
  });

  it("a contact of another number is a failed attempt on the verification", async () => {
    const v = await createPhone("telegram", "+37069100011");
    const u = { userId: 880002 };
    await tg.userSends(hook("telegram"), tg.textUpdate(u, `/start ${v.challenge.code}`));
    await tg.userSends(hook("telegram"), tg.contactUpdate(u, "+37069100012"));
    expect(await getV(v.id)).toMatchObject({ status: "pending", attempts: 1 });
  });

  it("refuses updates without the secret token, or with another, with 401", async () => {
    const v = await createPhone("telegram", "+37069100013");
    const u = { userId: 880003 };
    expect((await tg.userSends(hook("telegram"), tg.textUpdate(u, `/start ${v.challenge.code}`), { secret: "not-the-secret-token" })).status).toBe(401);
    expect((await tg.userSends(hook("telegram"), tg.contactUpdate(u, "+37069100013"), { secret: null })).status).toBe(401);
    expect((await getV(v.id)).status).toBe("pending");
  });

  it("a phone-first session: /start <token>, then the shared contact gives the session its number", async () => {
    const s = (await live.post("/api/v1/sessions", { channel: "telegram" })).body;
    const token = new URL(s.deep_link).searchParams.get("start")!;
    const u = { userId: 880004 };
    await tg.userSends(hook("telegram"), tg.textUpdate(u, `/start ${token}`));
    await tg.userSends(hook("telegram"), tg.contactUpdate(u, "+37069100014"));
    const got = (await live.get(`/api/v1/sessions/${s.id}`)).body;
    expect(got).toMatchObject({ status: "verified", phone_number: "+37069100014", channel: "telegram" });
    expect(await getV(got.verification_id)).toMatchObject({
      type: "phone",
      channel: "telegram",
      identifier: "+37069100014",
      status: "verified",
    });
  });

  it("ignores the bot's messages in group chats (another member could answer there)", async () => {
    const v = await createPhone("telegram", "+37069100016");
    const u = { userId: 880006, chatId: -100123 };
    const start = tg.textUpdate(u, `/start ${v.challenge.code}`);
    start.message!.chat.type = "supergroup";
    const contact = tg.contactUpdate(u, "+37069100016");
    contact.message!.chat.type = "supergroup";
    const n = tg.sent.length;
    expect((await tg.userSends(hook("telegram"), start)).status).toBe(200);
    expect((await tg.userSends(hook("telegram"), contact)).status).toBe(200);
    await new Promise((r) => setTimeout(r, 200));
    expect(tg.sent.length).toBe(n);
    expect((await getV(v.id)).status).toBe("pending");
  });

  it("a contact with no conversation started is answered with what to do, and changes nothing", async () => {
    const u = { userId: 880005 };
    await tg.userSends(hook("telegram"), tg.contactUpdate(u, "+37069100015"));
    const reply = await tg.waitForSent((c) => c.method === "sendMessage" && c.body.chat_id === u.userId);
    expect(String(reply.body.text)).toMatch(/Open the link/);
  });
});

describe("SMS (Twilio)", () => {
  it("verifies a code texted from the verification's number and replies through the Messages API", async () => {
    const v = await createPhone("sms", "+37069100020");
    expect(v.challenge.deep_link).toBe(`sms:${TW.number}?body=${v.challenge.code}`);
    const r = await tw.userSends(
      hook("sms"),
      { from: "+37069100020", to: TW.number, body: ` ${v.challenge.code.toLowerCase()} ` },
      { signedUrl: `${PUBLIC}/hooks/sms` },
    );
    expect(r.status).toBe(200);
    expect(r.body).toContain("<Response>");
    expect((await getV(v.id)).status).toBe("verified");
    const reply = await tw.waitForSent((m) => m.to === "+37069100020");
    expect(reply).toMatchObject({ from: TW.number });
    expect(reply.body).toMatch(/verified/);
  });

  it("refuses a hook signed over another URL or with another token", async () => {
    const v = await createPhone("sms", "+37069100021");
    const m = { from: "+37069100021", to: TW.number, body: v.challenge.code };
    expect((await tw.userSends(hook("sms"), m, { signedUrl: "https://attacker.example/hooks/sms" })).status).toBe(401);
    expect((await tw.userSends(hook("sms"), m, { signWith: "another-auth-token-0000", signedUrl: `${PUBLIC}/hooks/sms` })).status).toBe(401);
    expect((await getV(v.id)).status).toBe("pending");
  });

  it("a session on the channel sms: the user texts the pre-filled message to our number; an auth session from another number fails", async () => {
    const s = (await live.post("/api/v1/sessions", { channel: "sms", context: { signup: "s-sms" } })).body;
    expect(s).toMatchObject({ channel: "sms", test_mode: false, client_metadata: { signup: "s-sms" } });
    const link = /^sms:(\+\d+)\?body=(.+)$/.exec(s.deep_link)!;
    expect(link[1]).toBe(TW.number);
    const r = await tw.userSends(hook("sms"), { from: "+37069100030", to: TW.number, body: decodeURIComponent(link[2]) }, { signedUrl: `${PUBLIC}/hooks/sms` });
    expect(r.status).toBe(200);
    const got = (await live.get(`/api/v1/sessions/${s.id}`)).body;
    expect(got).toMatchObject({ status: "verified", channel: "sms", phone_number: "+37069100030" });
    expect((await getV(got.verification_id)).proof.token).toBe(got.proof.token);
    expect((await tw.waitForSent((m) => m.to === "+37069100030")).body).toMatch(/confirmed/i);

    const auth = (await live.post("/api/v1/auth/sessions", { channel: "sms", phone_number: "+37069100031" })).body;
    const body = decodeURIComponent(/\?body=(.+)$/.exec(auth.deep_link)![1]);
    await tw.userSends(hook("sms"), { from: "+37069100032", to: TW.number, body }, { signedUrl: `${PUBLIC}/hooks/sms` });
    expect((await live.get(`/api/v1/auth/sessions/${auth.id}`)).body).toMatchObject({ status: "failed", phone_number: "+37069100031" });
  });
});

describe("Telegram long polling (local development)", () => {
  it("fetches updates with getUpdates and verifies exactly as the webhook does", async () => {
    const poll = await startTelegramApi({ token: TG.token, botUsername: TG.bot });
    const s2 = await startStack({
      PUBLIC_BASE_URL: PUBLIC,
      TELEGRAM_API_URL: poll.url,
      ALLOW_PRIVATE_TARGETS: "true",
      TELEGRAM_BOT_TOKEN: TG.token,
      TELEGRAM_BOT_USERNAME: TG.bot,
      TELEGRAM_MODE: "polling",
    });
    try {
      const k = await s2.tenant("Polling");
      const c = api(s2.url, k.liveKey);
      // no webhook in polling mode
      expectError(await api(s2.url).post("/hooks/telegram", {}), 404, "not_found");
      const v = (await c.post("/api/v1/verifications", { type: "phone", channel: "telegram", identifier: "+37069100030" })).body;
      const u = { userId: 880010 };
      poll.queueUpdate(poll.textUpdate(u, `/start ${v.challenge.code}`));
      await poll.waitForSent((x) => x.method === "sendMessage" && x.body.chat_id === u.userId, 5_000);
      poll.queueUpdate(poll.contactUpdate(u, "+37069100030"));
      const done = await waitFor(async () => (await c.get(`/api/v1/verifications/${v.id}`)).body.status === "verified", 5_000);
      expect(done).toBe(true);
      // every update was acknowledged (a later offset confirmed it)
      await waitFor(async () => poll.pending().length === 0, 5_000);
      expect(poll.pending()).toHaveLength(0);
    } finally {
      await s2.close();
      await poll.close();
    }
  });
});
