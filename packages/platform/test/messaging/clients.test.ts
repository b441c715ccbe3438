import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  startTelegramApi,
  startTwilioApi,
  startWhatsAppApi,
  whatsappStatusPayload,
  whatsappTextPayload,
  type TelegramApi,
  type TwilioApi,
  type WhatsAppApi,
} from "../../../../test/support/providers.ts";
import { startReceiver, type Receiver } from "../../../../test/support/receiver.ts";
import { TelegramApiError, TelegramClient, parseTelegramUpdate, startTelegramPolling, type TelegramUpdate } from "../../src/messaging/telegram.ts";
import { TwilioApiError, TwilioClient, parseTwilioForm } from "../../src/messaging/twilio.ts";
import { WhatsAppApiError, WhatsAppClient, parseWhatsAppWebhook } from "../../src/messaging/whatsapp.ts";

const BOT_TOKEN = "7000000001:AAHk3xQ9vZ_secretpartofthetoken-0123";
const OTHER_TOKEN = "7000000001:AAHk3xQ9vZ_adifferentsecretvalue-9876";
const WA_TOKEN = "EAAGm0PX4ZCpsBAwhatsappaccesstoken0123456789";
const WA_SECRET = "whatsapp-app-secret-0123456789";
const TW_SID = `AC${"0123456789abcdef".repeat(2)}`;
const TW_TOKEN = "twilioauthtoken0123456789abcdef";

/** Runs fn and answers the error it threw (fails the test when it does not throw). */
async function errorOf(fn: () => Promise<unknown>): Promise<Error> {
  try {
    await fn();
  } catch (e) {
    return e as Error;
  }
  throw new Error("expected a rejection");
}

/** A URL on loopback where nothing listens. */
async function deadUrl(): Promise<string> {
  const r = await startReceiver();
  const url = new URL(r.url).origin;
  await r.close();
  return url;
}

function recordingLog() {
  const lines: { obj: object; msg: string }[] = [];
  return { lines, warn: (obj: object, msg: string) => void lines.push({ obj, msg }) };
}

async function until(cond: () => boolean, timeoutMs = 5_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("Telegram", () => {
  let tg: TelegramApi;
  let client: TelegramClient;
  beforeAll(async () => {
    tg = await startTelegramApi({ token: BOT_TOKEN, botUsername: "icv_test_bot" });
    client = new TelegramClient({ apiUrl: `${tg.url}/`, botToken: BOT_TOKEN, timeoutMs: 2_000 });
  });
  afterAll(() => tg.close());
  afterEach(() => {
    tg.sent.length = 0;
    tg.polls.length = 0;
  });

  it("sendMessage posts chat_id and text, with a request-contact keyboard or a keyboard removal", async () => {
    await client.sendMessage(42, "hello");
    await client.sendMessage(42, "share your number", { requestContact: "Share my phone number" });
    await client.sendMessage(42, "thanks", { remove: true });
    expect(tg.sent).toEqual([
      { method: "sendMessage", body: { chat_id: 42, text: "hello" } },
      {
        method: "sendMessage",
        body: {
          chat_id: 42,
          text: "share your number",
          reply_markup: {
            keyboard: [[{ text: "Share my phone number", request_contact: true }]],
            one_time_keyboard: true,
            resize_keyboard: true,
          },
        },
      },
      { method: "sendMessage", body: { chat_id: 42, text: "thanks", reply_markup: { remove_keyboard: true } } },
    ]);
  });

  it("setWebhook sends url, secret_token and allowed_updates; deleteWebhook clears it", async () => {
    await client.setWebhook("https://icv.example/hooks/telegram", "s3cret_token-ABCDEFGH");
    expect(tg.sent[0]).toEqual({
      method: "setWebhook",
      body: { url: "https://icv.example/hooks/telegram", secret_token: "s3cret_token-ABCDEFGH", allowed_updates: ["message"] },
    });
    expect(tg.webhook).toMatchObject({ url: "https://icv.example/hooks/telegram", secret: "s3cret_token-ABCDEFGH" });
    await client.deleteWebhook();
    expect(tg.webhook).toBeUndefined();
    expect(tg.sent.map((c) => c.method)).toEqual(["setWebhook", "deleteWebhook"]);
  });

  it("a refused token gives an error naming the method and Telegram's answer, never the token", async () => {
    const wrong = new TelegramClient({ apiUrl: tg.url, botToken: OTHER_TOKEN });
    const e = await errorOf(() => wrong.sendMessage(42, "hi"));
    expect(e).toBeInstanceOf(TelegramApiError);
    expect(e.message).toBe("Telegram sendMessage failed: 401 Unauthorized");
    expect((e as TelegramApiError).errorCode).toBe(401);
    expect(JSON.stringify(e) + e.message + String(e.stack) + String(e.cause)).not.toContain(OTHER_TOKEN.split(":")[1]);
    expect(tg.sent).toEqual([]);
  });

  it("Telegram's error description is passed on with any echo of the token redacted", async () => {
    tg.failNext("sendMessage", { error_code: 403, description: "Forbidden: bot was blocked by the user" });
    expect((await errorOf(() => client.sendMessage(42, "hi"))).message).toBe("Telegram sendMessage failed: 403 Forbidden: bot was blocked by the user");
    tg.failNext("setWebhook", { error_code: 400, description: `Bad Request: bot ${BOT_TOKEN} says no` });
    const e = await errorOf(() => client.setWebhook("https://icv.example/h", "abcdefghijklmnop"));
    expect(e.message).toBe("Telegram setWebhook failed: 400 Bad Request: bot [redacted] says no");
  });

  it("network failures and a URL that does not parse give errors without the token", async () => {
    const dead = new TelegramClient({ apiUrl: await deadUrl(), botToken: BOT_TOKEN });
    const e1 = await errorOf(() => dead.deleteWebhook());
    expect(e1.message).toMatch(/^Telegram deleteWebhook failed: network error/);
    const broken = new TelegramClient({ apiUrl: "http://[not-a-host", botToken: BOT_TOKEN });
    const e2 = await errorOf(() => broken.sendMessage(1, "x"));
    expect(e2.message).toMatch(/^Telegram sendMessage failed: network error/);
    for (const e of [e1, e2]) {
      expect(`${e.message} ${e.stack} ${String(e.cause)}`).not.toContain(BOT_TOKEN.split(":")[1]);
      expect(e.cause).toBeUndefined();
    }
  });

  it("a request that hangs times out", async () => {
    const held = await startReceiver("hold");
    try {
      const slow = new TelegramClient({ apiUrl: new URL(held.url).origin, botToken: BOT_TOKEN, timeoutMs: 200 });
      expect((await errorOf(() => slow.sendMessage(1, "x"))).message).toBe("Telegram sendMessage failed: timed out");
    } finally {
      await held.close();
    }
  });

  it("getUpdates returns updates from the offset on, and an offset acknowledges the ones below it", async () => {
    const a = tg.textUpdate({ userId: 11 }, "/start abc");
    const b = tg.contactUpdate({ userId: 11 }, "+15551234567");
    tg.queueUpdate(a);
    tg.queueUpdate(b);
    const first = await client.getUpdates(undefined, 0);
    expect(first.map((u) => u.update_id)).toEqual([a.update_id, b.update_id]);
    expect(first[0].message).toMatchObject({ text: "/start abc", chat: { id: 11, type: "private" }, from: { id: 11 } });
    expect(first[1].message?.contact).toEqual({ phone_number: "+15551234567", user_id: 11, first_name: "Test" });
    expect((await client.getUpdates(b.update_id, 0)).map((u) => u.update_id)).toEqual([b.update_id]);
    expect(await client.getUpdates(b.update_id + 1, 0)).toEqual([]);
    expect(tg.pending()).toEqual([]);
    expect(tg.polls).toEqual([
      { offset: undefined, timeout: 0 },
      { offset: b.update_id, timeout: 0 },
      { offset: b.update_id + 1, timeout: 0 },
    ]);
  });

  it("getUpdates long-polls until an update arrives, and its signal cancels the wait", async () => {
    const started = Date.now();
    const pending = client.getUpdates(undefined, 5);
    const u = tg.textUpdate({ userId: 12 }, "hi");
    setTimeout(() => tg.queueUpdate(u), 150);
    expect((await pending).map((x) => x.update_id)).toEqual([u.update_id]);
    expect(Date.now() - started).toBeLessThan(3_000);
    await client.getUpdates(u.update_id + 1, 0);

    const ac = new AbortController();
    const waiting = client.getUpdates(undefined, 10, ac.signal);
    setTimeout(() => ac.abort(), 100);
    expect((await errorOf(() => waiting)).message).toBe("Telegram getUpdates failed: aborted");
  });

  it("parseTelegramUpdate reads updates defensively", () => {
    const u = tg.contactUpdate({ userId: 5, chatId: 6, username: "alice" }, "+15550001111", 77);
    expect(parseTelegramUpdate(JSON.stringify(u))).toEqual({
      update_id: u.update_id,
      message: {
        message_id: u.message!.message_id,
        from: { id: 5, is_bot: false, first_name: "Test", username: "alice" },
        chat: { id: 6, type: "private" },
        date: u.message!.date,
        contact: { phone_number: "+15550001111", user_id: 77, first_name: "Test" },
      },
    });
    expect(parseTelegramUpdate(new TextEncoder().encode(JSON.stringify(tg.textUpdate({ userId: 5 }, "héllo"))))?.message?.text).toBe("héllo");
    for (const bad of ["", "not json", "null", "[]", '{"update_id":"1"}', '{"update_id":1.5}', '{"message":{}}'])
      expect(parseTelegramUpdate(bad)).toBeUndefined();
    // a message of an unexpected shape is dropped, the update (and its id) kept
    expect(parseTelegramUpdate('{"update_id":9,"message":{"chat":"x"}}')).toEqual({ update_id: 9 });
    expect(parseTelegramUpdate('{"update_id":9,"edited_message":{"text":"x"}}')).toEqual({ update_id: 9 });
  });

  describe("polling", () => {
    it("deletes the webhook once, hands updates over in order, acknowledges them, and stop() ends a pending long poll", async () => {
      await client.setWebhook("https://icv.example/hooks/telegram", "abcdefghijklmnop");
      tg.sent.length = 0;
      const [a, b, c] = [tg.textUpdate({ userId: 1 }, "one"), tg.textUpdate({ userId: 2 }, "two"), tg.textUpdate({ userId: 3 }, "three")];
      for (const u of [a, b, c]) tg.queueUpdate(u);
      const seen: number[] = [];
      const log = recordingLog();
      const poller = startTelegramPolling(
        client,
        async (u: TelegramUpdate) => {
          seen.push(u.update_id);
          if (u.update_id === b.update_id) throw new Error("handler broke");
        },
        log,
        { timeoutS: 20, retryMs: 50 },
      );
      await until(() => seen.length === 3);
      expect(seen).toEqual([a.update_id, b.update_id, c.update_id]);
      expect(log.lines).toHaveLength(1);
      expect(log.lines[0]).toMatchObject({ msg: expect.stringContaining("handler failed"), obj: { updateId: b.update_id } });
      // the next poll asks from c + 1 on, which acknowledges all three
      await until(() => tg.polls.length >= 2);
      expect(tg.polls[1]).toEqual({ offset: c.update_id + 1, timeout: 20 });
      expect(tg.pending()).toEqual([]);

      const d = tg.textUpdate({ userId: 4 }, "four");
      tg.queueUpdate(d);
      await until(() => seen.length === 4);
      expect(seen[3]).toBe(d.update_id);
      // the poll after d is pending at Telegram's side before stop()
      await until(() => tg.polls.length >= 3);

      const t0 = Date.now();
      await poller.stop();
      expect(Date.now() - t0).toBeLessThan(2_000);
      expect(tg.sent.filter((s) => s.method === "deleteWebhook")).toHaveLength(1);
      expect(tg.webhook).toBeUndefined();
      const polls = tg.polls.length;
      tg.queueUpdate(tg.textUpdate({ userId: 5 }, "after stop"));
      await new Promise((r) => setTimeout(r, 150));
      expect(tg.polls.length).toBe(polls);
      expect(seen).toHaveLength(4);
      await client.getUpdates(tg.nextUpdateId(), 0);
    });

    it("backs off after a failed poll without leaking the token, and stop() ends the back-off", async () => {
      tg.failNext("getUpdates", { error_code: 502, description: "Bad Gateway" });
      const log = recordingLog();
      const seen: number[] = [];
      const u = tg.textUpdate({ userId: 8 }, "eight");
      tg.queueUpdate(u);
      const poller = startTelegramPolling(client, async (x) => void seen.push(x.update_id), log, { timeoutS: 5, retryMs: 100 });
      await until(() => seen.length === 1);
      expect(log.lines).toEqual([{ obj: { err: "Telegram getUpdates failed: 502 Bad Gateway", retryInMs: 100 }, msg: "telegram polling failed; retrying" }]);
      await poller.stop();

      tg.failNext("deleteWebhook", { error_code: 500, description: "Internal Server Error" });
      const slow = startTelegramPolling(client, async () => undefined, log, { timeoutS: 5, retryMs: 60_000 });
      await until(() => log.lines.length === 2);
      const t0 = Date.now();
      await slow.stop();
      expect(Date.now() - t0).toBeLessThan(1_000);
      expect(JSON.stringify(log.lines)).not.toContain(BOT_TOKEN.split(":")[1]);
      await client.getUpdates(tg.nextUpdateId(), 0);
    });
  });
});

describe("WhatsApp", () => {
  let wa: WhatsAppApi;
  let client: WhatsAppClient;
  const biz = { phoneNumberId: "109876543210987", displayPhoneNumber: "15550001234" };
  beforeAll(async () => {
    wa = await startWhatsAppApi({ phoneNumberId: biz.phoneNumberId, accessToken: WA_TOKEN, appSecret: WA_SECRET });
    client = new WhatsAppClient({ apiUrl: wa.url, phoneNumberId: biz.phoneNumberId, accessToken: WA_TOKEN, timeoutMs: 2_000 });
  });
  afterAll(() => wa.close());

  it("sendText posts a Cloud API text message with the bearer token", async () => {
    expect(wa.url).toMatch(/\/v21\.0$/);
    await client.sendText("15551234567", "Your code is 123456");
    expect(wa.sent).toHaveLength(1);
    expect(wa.sent[0]).toMatchObject({
      to: "15551234567",
      type: "text",
      text: "Your code is 123456",
      authorization: `Bearer ${WA_TOKEN}`,
      body: {
        messaging_product: "whatsapp",
        recipient_type: "individual",
        to: "15551234567",
        type: "text",
        text: { preview_url: false, body: "Your code is 123456" },
      },
    });
    expect(wa.sent[0].id).toMatch(/^wamid\./);
  });

  it("sendCodeTemplate posts an authentication template: the code as body and copy-code button parameter", async () => {
    await client.sendCodeTemplate("15551234568", { name: "verification_code", language: "en_US" }, "K7Q2ZD");
    const m = await wa.waitForSent((x) => x.to === "15551234568");
    expect(m).toMatchObject({
      type: "template",
      authorization: `Bearer ${WA_TOKEN}`,
      template: { name: "verification_code", language: "en_US", body: ["K7Q2ZD"], buttons: ["K7Q2ZD"] },
    });
    expect(m.body.template).toEqual({
      name: "verification_code",
      language: { code: "en_US" },
      components: [
        { type: "body", parameters: [{ type: "text", text: "K7Q2ZD" }] },
        { type: "button", sub_type: "url", index: "0", parameters: [{ type: "text", text: "K7Q2ZD" }] },
      ],
    });
    // a template the account does not have is Graph's 132001, without the token
    const e = await errorOf(() => client.sendCodeTemplate("15551234568", { name: "nope", language: "en_US" }, "K7Q2ZD"));
    expect(e).toMatchObject({ status: 400, code: 132001 });
    expect(`${e.message} ${e.stack}`).not.toContain(WA_TOKEN);
  });

  it("a refused token gives Graph's code 190, never the token", async () => {
    const wrong = new WhatsAppClient({ apiUrl: wa.url, phoneNumberId: biz.phoneNumberId, accessToken: "EAAGwrongtoken0000000000000000" });
    const e = await errorOf(() => wrong.sendText("15551234567", "x"));
    expect(e).toBeInstanceOf(WhatsAppApiError);
    expect(e).toMatchObject({ status: 401, code: 190 });
    expect(e.message).toBe("WhatsApp send failed: HTTP 401 OAuthException 190: Invalid OAuth access token - Cannot parse access token");
    expect(`${e.message} ${e.stack}`).not.toContain("EAAGwrongtoken");
  });

  it("an unknown phone number id and an unreachable API are errors without the token", async () => {
    const other = new WhatsAppClient({ apiUrl: wa.url, phoneNumberId: "1111111111", accessToken: WA_TOKEN });
    const e = await errorOf(() => other.sendText("15551234567", "x"));
    expect(e).toMatchObject({ status: 400, code: 100 });
    expect(e.message).toContain("GraphMethodException 100");
    const dead = new WhatsAppClient({ apiUrl: await deadUrl(), phoneNumberId: biz.phoneNumberId, accessToken: WA_TOKEN });
    const e2 = await errorOf(() => dead.sendText("15551234567", "x"));
    expect(e2.message).toMatch(/^WhatsApp send failed: network error/);
    for (const x of [e, e2]) expect(`${x.message} ${x.stack}`).not.toContain(WA_TOKEN);
  });

  it("parseWhatsAppWebhook reads text, button and interactive replies and ignores statuses and garbage", () => {
    const p = whatsappTextPayload(biz, { from: "15551234567", text: "ICV-1234", id: "wamid.ABC", timestamp: 1_700_000_000 });
    expect(parseWhatsAppWebhook(JSON.stringify(p))).toEqual([
      { id: "wamid.ABC", from: "15551234567", text: "ICV-1234", timestamp: 1_700_000_000, phoneNumberId: biz.phoneNumberId },
    ]);
    expect(parseWhatsAppWebhook(new TextEncoder().encode(JSON.stringify(p)))).toHaveLength(1);
    expect(parseWhatsAppWebhook(JSON.stringify(whatsappStatusPayload(biz, { id: "wamid.X", recipient: "15551234567", status: "delivered" })))).toEqual([]);

    const value = p.entry[0].changes[0].value;
    const many = {
      object: "whatsapp_business_account",
      entry: [
        {
          id: "1",
          changes: [
            {
              field: "messages",
              value: {
                ...value,
                messages: [
                  { from: "15550000001", id: "wamid.B", timestamp: "1700000001", type: "button", button: { text: "Yes", payload: "yes" } },
                  {
                    from: "15550000002",
                    id: "wamid.I",
                    timestamp: "1700000002",
                    type: "interactive",
                    interactive: { type: "button_reply", button_reply: { id: "ok", title: "Confirm" } },
                  },
                  {
                    from: "15550000003",
                    id: "wamid.P",
                    timestamp: "1700000003",
                    type: "image",
                    image: { id: "m1", mime_type: "image/jpeg" },
                  },
                  { from: "+1 555", id: "wamid.bad", timestamp: "1700000004", type: "text", text: { body: "bad sender" } },
                  "not an object",
                ],
              },
            },
            "garbage",
          ],
        },
        null,
      ],
    };
    expect(parseWhatsAppWebhook(JSON.stringify(many))).toEqual([
      { id: "wamid.B", from: "15550000001", text: "Yes", timestamp: 1_700_000_001, phoneNumberId: biz.phoneNumberId },
      { id: "wamid.I", from: "15550000002", text: "Confirm", timestamp: 1_700_000_002, phoneNumberId: biz.phoneNumberId },
      { id: "wamid.P", from: "15550000003", text: undefined, timestamp: 1_700_000_003, phoneNumberId: biz.phoneNumberId },
    ]);
    for (const bad of [
      "",
      "nope",
      "null",
      "[]",
      JSON.stringify({ ...p, object: "page" }),
      JSON.stringify({ object: "whatsapp_business_account", entry: {} }),
    ]) {
      expect(parseWhatsAppWebhook(bad)).toEqual([]);
    }
  });
});

describe("Twilio", () => {
  let tw: TwilioApi;
  let client: TwilioClient;
  beforeAll(async () => {
    tw = await startTwilioApi({ accountSid: TW_SID, authToken: TW_TOKEN });
    client = new TwilioClient({ apiUrl: tw.url, accountSid: TW_SID, authToken: TW_TOKEN, from: "+15550009999", timeoutMs: 2_000 });
  });
  afterAll(() => tw.close());

  it("sendSms posts To, From and Body with Basic auth and is accepted (201, queued)", async () => {
    const seen: { auth?: string; type?: string; body: string }[] = [];
    const spy = await startReceiver((r) => {
      seen.push({ auth: r.headers.authorization, type: r.headers["content-type"], body: r.body });
      return { status: 201, headers: { "content-type": "application/json" }, body: '{"sid":"SM1","status":"queued"}' };
    });
    try {
      await new TwilioClient({ apiUrl: new URL(spy.url).origin, accountSid: TW_SID, authToken: TW_TOKEN, from: "+15550009999" }).sendSms(
        "+15551234567",
        "Code: 12 34&56",
      );
      expect(spy.requests[0].path).toBe(`/2010-04-01/Accounts/${TW_SID}/Messages.json`);
      expect(seen[0].auth).toBe(`Basic ${Buffer.from(`${TW_SID}:${TW_TOKEN}`).toString("base64")}`);
      expect(seen[0].type).toBe("application/x-www-form-urlencoded");
      expect(Object.fromEntries(new URLSearchParams(seen[0].body))).toEqual({
        To: "+15551234567",
        From: "+15550009999",
        Body: "Code: 12 34&56",
      });
    } finally {
      await spy.close();
    }
    await client.sendSms("+15551234567", "Your code is 123456");
    expect(tw.sent).toEqual([{ sid: expect.stringMatching(/^SM[0-9a-f]{32}$/), to: "+15551234567", from: "+15550009999", body: "Your code is 123456" }]);
  });

  it("a refused auth token gives Twilio's 20003, never the token", async () => {
    const wrong = new TwilioClient({
      apiUrl: tw.url,
      accountSid: TW_SID,
      authToken: "wrongtoken0123456789abcdefabcdef",
      from: "+15550009999",
    });
    const e = await errorOf(() => wrong.sendSms("+15551234567", "x"));
    expect(e).toBeInstanceOf(TwilioApiError);
    expect(e).toMatchObject({ status: 401, code: 20003, message: "Twilio send failed: HTTP 401 code 20003: Authenticate" });
    expect(`${e.message} ${e.stack}`).not.toContain("wrongtoken");
  });

  it("an invalid number is Twilio's 21211; a hanging API times out", async () => {
    expect(await errorOf(() => client.sendSms("12345", "x"))).toMatchObject({ status: 400, code: 21211 });
    const held = await startReceiver("hold");
    try {
      const slow = new TwilioClient({
        apiUrl: new URL(held.url).origin,
        accountSid: TW_SID,
        authToken: TW_TOKEN,
        from: "+15550009999",
        timeoutMs: 200,
      });
      const e = await errorOf(() => slow.sendSms("+15551234567", "x"));
      expect(e.message).toBe("Twilio send failed: timed out");
      expect(e.stack).not.toContain(TW_TOKEN);
    } finally {
      await held.close();
    }
  });

  it("parseTwilioForm reads MessageSid (or SmsSid), From, To and Body", () => {
    const form =
      "ToCountry=US&SmsMessageSid=SMabc&NumMedia=0&SmsSid=SMabc&Body=ICV-1234+hi%26bye&To=%2B15550009999&MessageSid=SMabc&AccountSid=AC1&From=%2B15551234567&ApiVersion=2010-04-01";
    expect(parseTwilioForm(form)).toEqual({ sid: "SMabc", from: "+15551234567", to: "+15550009999", body: "ICV-1234 hi&bye" });
    expect(parseTwilioForm(new TextEncoder().encode("SmsSid=SMold&From=%2B1555&To=%2B1666"))).toEqual({
      sid: "SMold",
      from: "+1555",
      to: "+1666",
      body: "",
    });
    for (const bad of ["", "From=%2B1&To=%2B2&Body=x", "MessageSid=SM1&To=%2B2", "MessageSid=SM1&From=%2B1", "garbage"])
      expect(parseTwilioForm(bad)).toBeUndefined();
  });
});

describe("stand-ins play the user", () => {
  let hook: Receiver;
  beforeAll(async () => {
    hook = await startReceiver(204);
  });
  afterAll(() => hook.close());

  it("each delivers a webhook our parsers read", async () => {
    const tg = await startTelegramApi({ token: BOT_TOKEN, botUsername: "icv_test_bot" });
    const wa = await startWhatsAppApi({ phoneNumberId: "109876543210987", accessToken: WA_TOKEN, appSecret: WA_SECRET });
    const tw = await startTwilioApi({ accountSid: TW_SID, authToken: TW_TOKEN });
    try {
      await new TelegramClient({ apiUrl: tg.url, botToken: BOT_TOKEN }).setWebhook(hook.url, "hook-secret-0123456789");
      const u = tg.textUpdate({ userId: 3 }, "/start x");
      expect(await tg.userSends(hook.url, u)).toEqual({ status: 204, body: "" });
      expect(hook.requests[0].headers["x-telegram-bot-api-secret-token"]).toBe("hook-secret-0123456789");
      expect(parseTelegramUpdate(hook.requests[0].body)?.message?.text).toBe("/start x");

      await wa.userSends(hook.url, { from: "15551234567", text: "ICV-1", id: "wamid.Q" });
      expect(parseWhatsAppWebhook(hook.requests[1].body)).toMatchObject([{ id: "wamid.Q", from: "15551234567", text: "ICV-1" }]);

      await tw.userSends(hook.url, { from: "+15551234567", to: "+15550009999", body: "ICV-2", sid: "SMq" });
      expect(parseTwilioForm(hook.requests[2].body)).toEqual({ sid: "SMq", from: "+15551234567", to: "+15550009999", body: "ICV-2" });
    } finally {
      await Promise.all([tg.close(), wa.close(), tw.close()]);
    }
  });
});
