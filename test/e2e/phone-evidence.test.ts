// A phone proof rests only on evidence from the phone (DECISIONS.md, Verifications). The test
// plays the attacker first: it holds a reverse-OTP code the API (or the hosted page) showed it and
// submits it without any message from the phone, with a live and a test key. Then the two honest
// ways: inbound (the code arrives from the phone through the provider) and outbound (we send a
// code to the phone through Twilio / the WhatsApp Cloud API, read here from what the local
// stand-in received, never from our API). Last, the per-sender throttle of inbound codes.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "@icv/platform";
import { api, startStack, type Stack, type TenantKeys } from "../support/stack.ts";
import { expectError } from "../support/expect-error.ts";
import { startMessagingProviders, type TelegramApi, type TwilioApi, type WhatsAppApi } from "../support/providers.ts";

const PUBLIC = "https://verify.example.test";
const TG = { token: "7000000002:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1", bot: "icv_evidence_bot", secret: "tg-webhook-secret-evidence-01" };
const WA = {
  phoneNumberId: "1098765433",
  accessToken: "EAAG-evidence-access-token-01",
  appSecret: "wa-app-secret-evidence-0001",
  number: "+15550001235",
};
const TW = { sid: "AC0123456789abcdef0123456789abcdee", token: "twilio-auth-token-evidence-01", number: "+15550002001" };

let tg: TelegramApi;
let wa: WhatsAppApi;
let tw: TwilioApi;
let stack: Stack;
let t: TenantKeys;
let live: ReturnType<typeof api>;
let test: ReturnType<typeof api>;
const clock = new ManualClock(Date.now());
const hook = (p: string) => `${stack.url}/hooks/${p}`;
let n = 0;
const number = () => `+3706940${String(n++).padStart(4, "0")}`;

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
  t = await stack.tenant("Evidence");
  live = api(stack.url, t.liveKey);
  test = api(stack.url, t.testKey);
});
afterAll(async () => {
  await stack?.close();
  await Promise.all([tg?.close(), wa?.close(), tw?.close()]);
});

/** Plays the user texting our SMS number (signed over the public URL Twilio calls); the hook must accept it. */
async function smsFrom(from: string, body: string) {
  const r = await tw.userSends(hook("sms"), { from, to: TW.number, body }, { signedUrl: `${PUBLIC}/hooks/sms` });
  expect(r.status, r.body).toBe(200);
}

/** Plays the user writing to our WhatsApp number (a signed Cloud API delivery); the hook must accept it. */
async function waFrom(m: { from: string; text: string; id?: string }) {
  const r = await wa.userSends(hook("whatsapp"), m);
  expect(r.status, r.body).toBe(200);
}

const sentToProviders = () => wa.sent.length + tw.sent.length + tg.sent.filter((c) => c.method === "sendMessage").length;

/** The 6-character code in an SMS the Twilio stand-in accepted for `to`. */
async function smsCodeTo(to: string, after = 0): Promise<string> {
  const m = await tw.waitForSent((s) => s.to === to && tw.sent.indexOf(s) >= after);
  const code = /verification code is ([A-Z0-9]{6})\b/.exec(m.body)?.[1];
  expect(code, m.body).toBeDefined();
  return code!;
}

describe("the attacker: a shown reverse-OTP code submitted without the phone", () => {
  for (const [keyName, client] of [
    ["live", () => live],
    ["test", () => test],
  ] as const) {
    for (const channel of ["whatsapp", "sms", "telegram"]) {
      it(`is refused on ${channel} with a ${keyName} key, and the verification stays pending without a proof`, async () => {
        const c = client();
        const created = await c.post("/api/v1/verifications", { type: "phone", channel, identifier: number() });
        expect(created.status, created.text).toBe(201);
        expect(created.body.delivery).toBe("inbound");
        const code = created.body.challenge.code;
        expect(code).toMatch(/^[A-Z0-9]{6}$/);
        const e = expectError(await c.post(`/api/v1/verifications/${created.body.id}/submit`, { challenge_code: code }), 409, "invalid_state");
        expect(e.message).toMatch(/send the code from the phone/);
        // claiming the verification's own number as the source changes nothing: the caller is not evidence
        expectError(
          await c.post(`/api/v1/verifications/${created.body.id}/submit`, {
            challenge_code: code,
            source_identifier: created.body.identifier,
          }),
          409,
          "invalid_state",
        );
        const after = (await c.get(`/api/v1/verifications/${created.body.id}`)).body;
        expect(after).toMatchObject({ status: "pending", attempts: 0 });
        expect(after.proof).toBeUndefined();
      });
    }
  }

  for (const [keyName, client] of [
    ["live", () => live],
    ["test", () => test],
  ] as const) {
    it(`is refused through the hosted page's token API (${keyName} request), and the asset stays in progress`, async () => {
      const r = await client().post("/api/v1/verification-requests", {
        assets: [{ type: "phone", identifier: number(), channel: "whatsapp" }],
      });
      expect(r.status, r.text).toBe(201);
      const token = new URL(r.body.verification_url).hash.slice(1);
      const p = `/api/v1/verify/request/${r.body.id}`;
      const h = { "x-request-token": token };
      const view = (await api(stack.url).get(p, h)).body;
      const shown = view.assets[0].challenge.code;
      expect(shown).toMatch(/^[A-Z0-9]{6}$/);
      expectError(await api(stack.url).post(`${p}/assets/0/submit`, { challenge_code: shown }, h), 409, "invalid_state");
      const after = (await api(stack.url).get(p, h)).body;
      expect(after.status).toBe("pending");
      expect(after.assets[0].status).toBe("in_progress");
      const v = (await client().get(`/api/v1/verifications/${view.assets[0].verification_id}`)).body;
      expect(v).toMatchObject({ status: "pending", attempts: 0 });
    });
  }

  it("the same code does verify when it arrives from the phone through the provider (inbound)", async () => {
    const phone = number();
    const v = (await live.post("/api/v1/verifications", { type: "phone", channel: "whatsapp", identifier: phone })).body;
    await waFrom({ from: phone.slice(1), text: v.challenge.code });
    const got = (await live.get(`/api/v1/verifications/${v.id}`)).body;
    expect(got.status).toBe("verified");
    expect((await live.post("/api/v1/proofs/validate", { proof_token: got.proof.token, identifier: phone })).body.valid).toBe(true);
  });
});

describe("outbound: a code sent to the phone", () => {
  it("SMS (live): never shown, sent through Twilio to the number, completes only with the code the phone received", async () => {
    const phone = number();
    const before = tw.sent.length;
    const r = await live.post("/api/v1/verifications", { type: "phone", channel: "sms", identifier: phone, delivery: "outbound" });
    expect(r.status, r.text).toBe(201);
    expect(r.body).toMatchObject({ status: "pending", delivery: "outbound", max_attempts: 5 });
    expect(r.body.challenge.code).toBeUndefined();
    expect(r.body.challenge.deep_link).toBeUndefined();
    expect(r.body.challenge.instruction).toMatch(/sent a 6-character code by SMS/);
    expect(r.body.challenge.instruction).not.toMatch(/\b[A-Z0-9]{6}\b/);
    expect(JSON.stringify((await live.get(`/api/v1/verifications/${r.body.id}`)).body)).not.toMatch(/"code"/);

    const sms = await tw.waitForSent((s) => s.to === phone && tw.sent.indexOf(s) >= before);
    expect(sms.from).toBe(TW.number);
    const code = await smsCodeTo(phone, before);
    expect(sms.body).toContain(`@verify.example.test #${code}`);

    const wrong = code === "AAAAAA" ? "BBBBBB" : "AAAAAA";
    const e = expectError(await live.post(`/api/v1/verifications/${r.body.id}/submit`, { challenge_code: wrong }), 400, "invalid_code");
    expect(e.attempts_remaining).toBe(4);
    const ok = await live.post(`/api/v1/verifications/${r.body.id}/submit`, { challenge_code: code.toLowerCase() });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body).toMatchObject({ status: "verified", delivery: "outbound", identifier: phone });
    expect((await live.post("/api/v1/proofs/validate", { proof_token: ok.body.proof.token, identifier: phone })).body.valid).toBe(true);
  });

  it("WhatsApp (live): an authentication template message with the code as body and copy-code button parameter", async () => {
    const phone = number();
    const before = wa.sent.length;
    const r = await live.post("/api/v1/verifications", { type: "phone", channel: "whatsapp", identifier: phone, delivery: "outbound" });
    expect(r.status, r.text).toBe(201);
    expect(r.body.challenge.code).toBeUndefined();
    expect(r.body.challenge.deep_link).toBeUndefined();
    const m = await wa.waitForSent((s) => s.to === phone.slice(1) && wa.sent.indexOf(s) >= before);
    expect(m.type).toBe("template");
    expect(m.authorization).toBe(`Bearer ${WA.accessToken}`);
    expect(m.template).toMatchObject({ name: "verification_code", language: "en_US" });
    const code = m.template!.body[0];
    expect(code).toMatch(/^[A-Z0-9]{6}$/);
    expect(m.template!.buttons).toEqual([code]);
    // another number's source_identifier fails like a wrong code
    expectError(await live.post(`/api/v1/verifications/${r.body.id}/submit`, { challenge_code: code, source_identifier: number() }), 400, "invalid_code");
    const ok = await live.post(`/api/v1/verifications/${r.body.id}/submit`, { challenge_code: code, source_identifier: phone });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.status).toBe("verified");
  });

  it("an outbound code does not complete by an inbound message (it was never shown; the paths stay apart)", async () => {
    const phone = number();
    const before = tw.sent.length;
    const r = (await live.post("/api/v1/verifications", { type: "phone", channel: "sms", identifier: phone, delivery: "outbound" })).body;
    const code = await smsCodeTo(phone, before);
    await smsFrom(phone, code);
    expect((await live.get(`/api/v1/verifications/${r.id}`)).body.status).toBe("pending");
  });

  it("resend sends a new code to the phone (not within 60 s); the old code stops working", async () => {
    const phone = number();
    const before = tw.sent.length;
    const r = (await live.post("/api/v1/verifications", { type: "phone", channel: "sms", identifier: phone, delivery: "outbound" })).body;
    const first = await smsCodeTo(phone, before);
    expectError(await live.post(`/api/v1/verifications/${r.id}/resend`), 429, "resend_too_soon");
    clock.advance(61_000);
    const mid = tw.sent.length;
    const re = await live.post(`/api/v1/verifications/${r.id}/resend`);
    expect(re.status, re.text).toBe(200);
    expect(re.body).toMatchObject({ success: true, resends_remaining: 4 });
    expect(re.body.message).toMatch(/\+3706\*+\d{4}/);
    expect(re.body.challenge.code).toBeUndefined();
    const second = await smsCodeTo(phone, mid);
    expect(tw.sent[tw.sent.length - 1].body).toMatch(/Earlier codes no longer work/);
    if (second !== first) expectError(await live.post(`/api/v1/verifications/${r.id}/submit`, { challenge_code: first }), 400, "invalid_code");
    expect((await live.post(`/api/v1/verifications/${r.id}/submit`, { challenge_code: second })).body.status).toBe("verified");
  });

  it("test key: nothing is sent; /test/messages lists the outbound message with the code, which submit accepts", async () => {
    const phone = number();
    const sent = sentToProviders();
    const r = await test.post("/api/v1/verifications", { type: "phone", channel: "sms", identifier: phone, delivery: "outbound" });
    expect(r.status, r.text).toBe(201);
    expect(r.body.challenge.code).toBeUndefined();
    const msgs = (await test.get(`/api/v1/test/messages?verification_id=${r.body.id}`)).body.data;
    expect(msgs).toHaveLength(1);
    expect(msgs[0]).toMatchObject({ direction: "outbound", channel: "sms", to: phone, from: TW.number });
    const code = /verification code is ([A-Z0-9]{6})/.exec(msgs[0].text)![1];
    const wa1 = await test.post("/api/v1/verifications", { type: "phone", channel: "whatsapp", identifier: phone, delivery: "outbound" });
    const waMsg = (await test.get(`/api/v1/test/messages?verification_id=${wa1.body.id}`)).body.data[0];
    expect(waMsg).toMatchObject({
      direction: "outbound",
      channel: "whatsapp",
      to: phone,
      subject: "WhatsApp template verification_code (en_US)",
    });
    expect(sentToProviders()).toBe(sent);
    const ok = await test.post(`/api/v1/verifications/${r.body.id}/submit`, { challenge_code: code });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.status).toBe("verified");
  });

  it("refuses outbound on telegram (it cannot message a number first) and delivery on other types", async () => {
    const e = expectError(
      await live.post("/api/v1/verifications", { type: "phone", channel: "telegram", identifier: number(), delivery: "outbound" }),
      400,
      "validation_error",
    );
    expect(e.message).toMatch(/sms or whatsapp/);
    expectError(
      await test.post("/api/v1/verifications", { type: "email", channel: "email", identifier: "a@example.com", delivery: "outbound" }),
      400,
      "validation_error",
    );
    expectError(
      await test.post("/api/v1/verifications", { type: "phone", channel: "sms", identifier: number(), delivery: "carrier-pigeon" }),
      400,
      "validation_error",
    );
  });

  it("a provider refusal is a 503 that leaves nothing behind and never carries the token", async () => {
    const phone = "+37069499999";
    // the stand-in only knows the default template: another name is refused by "Meta"
    const other = await startStack({
      WHATSAPP_API_URL: wa.url,
      ALLOW_PRIVATE_TARGETS: "true",
      WHATSAPP_PHONE_NUMBER: WA.number,
      WHATSAPP_PHONE_NUMBER_ID: WA.phoneNumberId,
      WHATSAPP_ACCESS_TOKEN: WA.accessToken,
      WHATSAPP_APP_SECRET: WA.appSecret,
      WHATSAPP_OTP_TEMPLATE: "not_approved",
    });
    try {
      const o = await other.tenant("Template");
      const r = await api(other.url, o.liveKey).post("/api/v1/verifications", {
        type: "phone",
        channel: "whatsapp",
        identifier: phone,
        delivery: "outbound",
      });
      const e = expectError(r, 503, "service_unavailable");
      expect(r.text).not.toContain(WA.accessToken);
      expect(e.message).toMatch(/WhatsApp message could not be sent/);
      expect((await api(other.url, o.liveKey).get("/api/v1/verifications")).body.data).toHaveLength(0);
    } finally {
      await other.close();
    }
  });
});

describe("inbound codes are throttled per sender", () => {
  const unknownCode = (i: number) => `ZQ${String(i).padStart(4, "0")}`;

  it("ignores the 11th unknown code from one number within the hour (one reply says so), and listens again after the hour", async () => {
    const phone = number();
    const waId = phone.slice(1);
    const v = (await live.post("/api/v1/verifications", { type: "phone", channel: "whatsapp", identifier: phone })).body;
    for (let i = 0; i < 10; i++) {
      expect((await wa.userSends(hook("whatsapp"), { from: waId, text: unknownCode(i) })).status).toBe(200);
    }
    await wa.waitForSent((m) => m.to === waId && wa.sent.filter((x) => x.to === waId).length >= 10);
    expect(wa.sent.filter((m) => m.to === waId).every((m) => /don't recognise/.test(m.text ?? ""))).toBe(true);

    // the 11th message, even the right code, is ignored: the verification stays pending
    await waFrom({ from: waId, text: v.challenge.code });
    const notice = await wa.waitForSent((m) => m.to === waId && /Too many wrong or unknown codes/.test(m.text ?? ""));
    expect(notice).toBeDefined();
    expect((await live.get(`/api/v1/verifications/${v.id}`)).body).toMatchObject({ status: "pending", attempts: 0 });
    // only one reply says so
    const replies = wa.sent.filter((m) => m.to === waId).length;
    await waFrom({ from: waId, text: v.challenge.code });
    await new Promise((r) => setTimeout(r, 300));
    expect(wa.sent.filter((m) => m.to === waId).length).toBe(replies);
    expect((await live.get(`/api/v1/verifications/${v.id}`)).body.status).toBe("pending");

    // the same number over SMS is the same sender
    await smsFrom(phone, unknownCode(99));
    await new Promise((r) => setTimeout(r, 300));
    expect(tw.sent.filter((m) => m.to === phone)).toHaveLength(0);

    // an hour later the sender is heard again (a new verification: the first one has expired)
    clock.advance(3600_000 + 1000);
    const v2 = (await live.post("/api/v1/verifications", { type: "phone", channel: "whatsapp", identifier: phone })).body;
    await waFrom({ from: waId, text: v2.challenge.code });
    expect((await live.get(`/api/v1/verifications/${v2.id}`)).body.status).toBe("verified");
  });

  it("a provider's retry of the same message does not count twice", async () => {
    const phone = number();
    const waId = phone.slice(1);
    const v = (await live.post("/api/v1/verifications", { type: "phone", channel: "whatsapp", identifier: phone })).body;
    // 9 unknown codes, each delivered twice (Meta retries): 9 strikes, not 18
    for (let i = 0; i < 9; i++) {
      const id = `wamid.retry-${phone}-${i}`;
      await waFrom({ from: waId, text: unknownCode(i), id });
      await waFrom({ from: waId, text: unknownCode(i), id });
    }
    await waFrom({ from: waId, text: v.challenge.code });
    expect((await live.get(`/api/v1/verifications/${v.id}`)).body.status).toBe("verified");
  });

  it("counts per Telegram user: after 10 unknown codes the 11th /start is ignored with one reply", async () => {
    const phone = number();
    const user = { userId: 880_000_000 + n };
    const tgHook = hook("telegram");
    for (let i = 0; i < 10; i++) {
      expect((await tg.userSends(tgHook, tg.textUpdate(user, `/start ${unknownCode(i)}`))).status).toBe(200);
      expect((await tg.userSends(tgHook, tg.contactUpdate(user, phone))).status).toBe(200);
    }
    const v = (await live.post("/api/v1/verifications", { type: "phone", channel: "telegram", identifier: phone })).body;
    const before = tg.sent.length;
    await tg.userSends(tgHook, tg.textUpdate(user, `/start ${v.challenge.code}`));
    const notice = await tg.waitForSent((c) => tg.sent.indexOf(c) >= before && c.body.chat_id === user.userId);
    expect(String(notice.body.text)).toMatch(/Too many wrong or unknown codes/);
    // no conversation was opened: sharing the contact now settles nothing
    await tg.userSends(tgHook, tg.contactUpdate(user, phone));
    expect((await live.get(`/api/v1/verifications/${v.id}`)).body.status).toBe("pending");
  });

  it("counts wrong codes too: another number's code sent 5 times and 5 unknown codes make 10 strikes", async () => {
    const attacker = number();
    const victim = (await live.post("/api/v1/verifications", { type: "phone", channel: "sms", identifier: number() })).body;
    for (let i = 0; i < 5; i++) await smsFrom(attacker, victim.challenge.code);
    expect((await live.get(`/api/v1/verifications/${victim.id}`)).body).toMatchObject({ status: "failed", attempts: 5 });
    for (let i = 0; i < 5; i++) await smsFrom(attacker, unknownCode(i));
    const own = (await live.post("/api/v1/verifications", { type: "phone", channel: "sms", identifier: attacker })).body;
    await smsFrom(attacker, own.challenge.code);
    expect((await tw.waitForSent((m) => m.to === attacker && /Too many wrong or unknown codes/.test(m.body))).from).toBe(TW.number);
    expect((await live.get(`/api/v1/verifications/${own.id}`)).body.status).toBe("pending");
  });

  it("counts per sender: another number is not throttled by the first one's strikes", async () => {
    const noisy = number().slice(1);
    for (let i = 0; i < 11; i++) await waFrom({ from: noisy, text: unknownCode(i) });
    const phone = number();
    const v = (await live.post("/api/v1/verifications", { type: "phone", channel: "whatsapp", identifier: phone })).body;
    await waFrom({ from: phone.slice(1), text: v.challenge.code });
    expect((await live.get(`/api/v1/verifications/${v.id}`)).body.status).toBe("verified");
  });
});
