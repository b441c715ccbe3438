// Inbound provider messages (Telegram updates, WhatsApp webhooks, Twilio forms) on a real
// SessionStore, with a ManualClock, a fake verification client and reply clients that record what
// the bots send: what the sender is told, and what the message did to a verification or a session.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Client } from "@connectrpc/connect";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import type { ProjectService } from "@icv/contracts/gen/icv/verification/v1/project_service_pb.ts";
import type { AppError, ManualClock, Scope } from "@icv/platform";
import { CHAT_TTL_MS, Inbound, SENDER_STRIKES, SENDER_WINDOW_MS, type Repliers } from "../src/inbound.ts";
import { Sessions } from "../src/sessions.ts";
import type { InboundStore } from "../src/store/inbound.ts";
import type { SessionStore } from "../src/store/sessions.ts";
import { REPLY } from "../src/texts.ts";
import { sessionToken } from "../src/tokens.ts";
import { KEY, fakeRepliers, type fakeVerification, openStore, providersConfig, type recordingLogger, sessionRig } from "./support.ts";

const LIVE: Scope = { tenantId: "ten_inbound", env: "live" };
const ME = "+37069199199";
const SOMEONE = "+37069100002";
const ASK = { requestContact: REPLY.shareButton };
const REMOVE = { remove: true };

let db: Awaited<ReturnType<typeof openStore>>;
let store: SessionStore;
let inbox: InboundStore;
let clock: ManualClock;
let v: ReturnType<typeof fakeVerification>;
let rep: ReturnType<typeof fakeRepliers>;
let log: ReturnType<typeof recordingLogger>;
let sessions: Sessions;
let inbound: Inbound;
const config = providersConfig();

beforeAll(async () => {
  db = await openStore();
  store = db.store;
  inbox = db.inbox;
});
afterAll(() => db?.close());
beforeEach(() => {
  ({ clock, v, log, sessions } = sessionRig(store));
  rep = fakeRepliers();
  inbound = inboundWith(rep.repliers);
});
const inboundWith = (repliers: Repliers) =>
  new Inbound({ store: inbox, sessions, verification: v.client, repliers, clock, logger: log.logger, hmacKey: "inbound-hmac-key" });

// provider bodies, each message with its own id
let seq = 0;
const json = (o: unknown) => Buffer.from(JSON.stringify(o));
const tgMessage = (user: number, extra: object, chat = { id: user, type: "private" }, isBot = false) => ({
  update_id: ++seq,
  message: { message_id: seq, from: { id: user, is_bot: isBot, first_name: "T" }, chat, date: 1_790_000_000, ...extra },
});
const tgText = (user: number, text: string) => json(tgMessage(user, { text }));
const tgContact = (user: number, phone: string, contactUser = user) => json(tgMessage(user, { contact: { phone_number: phone, user_id: contactUser } }));
const waBody = (value: object) =>
  json({
    object: "whatsapp_business_account",
    entry: [{ id: "1", changes: [{ field: "messages", value: { metadata: { phone_number_id: "1234567890" }, ...value } }] }],
  });
const waMessage = (from: string, text: string | undefined, id = `wamid.${++seq}`) =>
  text === undefined
    ? { from, id, timestamp: "1790000000", type: "image", image: { id: "media1" } }
    : { from, id, timestamp: "1790000000", type: "text", text: { body: text } };
const waText = (from: string, text: string | undefined, id?: string) => waBody({ messages: [waMessage(from, text, id)] });
const sms = (from: string, body: string, sid = `SM${++seq}`) =>
  Buffer.from(new URLSearchParams({ MessageSid: sid, From: from, To: "+15550002000", Body: body }).toString());

/** Waits for the replies the handled messages sent (a Telegram reply may be queued by another). */
async function settle(): Promise<void> {
  await inbound.drain();
  await inbound.drain();
}
const texts = () => rep.sent.map((s) => s.text);

describe("a code (reverse OTP)", () => {
  it("a WhatsApp message with a code completes the verification from the sender's number and replies with the success text", async () => {
    v.codes.set("QW12ER", { channel: "whatsapp", phone: ME });
    expect(await inbound.handle("whatsapp", waText("37069199199", "my code is QW12ER", "wamid.code1"))).toEqual(["verified"]);
    expect(v.callsOf("completeInboundCode")).toEqual([{ channel: "whatsapp", code: "QW12ER", sender: ME, messageKey: "whatsapp:wamid.code1" }]);
    await settle();
    expect(rep.sent).toEqual([{ provider: "whatsapp", to: "37069199199", text: REPLY.verified }]);
  });

  it("an SMS with a code from another number is told it is for another number; the verification service's own text wins when it gives one", async () => {
    v.codes.set("ZX98CV", { channel: "sms", phone: ME });
    expect(await inbound.handle("sms", sms(SOMEONE, "zx98cv"))).toEqual(["wrong_sender"]);
    v.onCode = () => ({ outcome: "verified", reply: "Welcome to Acme!" });
    expect(await inbound.handle("sms", sms(ME, "ZX98CV"))).toEqual(["verified"]);
    await settle();
    expect(rep.sent).toEqual([
      { provider: "sms", to: SOMEONE, text: REPLY.wrongSender(4) },
      { provider: "sms", to: ME, text: "Welcome to Acme!" },
    ]);
  });

  it("Telegram: /start with a code asks for the contact; the user's own contact completes it with that number", async () => {
    v.codes.set("TG12AB", { channel: "telegram", phone: ME });
    expect(await inbound.handle("telegram", tgText(501, "/start TG12AB"))).toEqual(["contact_requested"]);
    expect(v.callsOf("completeInboundCode")).toEqual([]);
    const contact = tgContact(501, "37069199199");
    expect(await inbound.handle("telegram", contact)).toEqual(["verified"]);
    expect(v.callsOf("completeInboundCode")).toEqual([{ channel: "telegram", code: "TG12AB", sender: ME, messageKey: `telegram:${seq}` }]);
    // the conversation is over: another contact is told what to do
    expect(await inbound.handle("telegram", tgContact(501, "37069199199"))).toEqual(["no_conversation"]);
    await settle();
    expect(rep.sent.map((s) => [s.to, s.text, s.keyboard])).toEqual([
      ["501", REPLY.askContact, ASK],
      ["501", REPLY.verified, REMOVE],
      ["501", REPLY.noConversation, REMOVE],
    ]);
  });

  it("Telegram: someone else's contact is refused and the button offered again; after 10 minutes the conversation is gone", async () => {
    v.codes.set("TG34CD", { channel: "telegram", phone: ME });
    await inbound.handle("telegram", tgText(502, "TG34CD"));
    expect(await inbound.handle("telegram", tgContact(502, "37069199199", 999))).toEqual(["foreign_contact"]);
    clock.advance(CHAT_TTL_MS);
    expect(await inbound.handle("telegram", tgContact(502, "37069199199"))).toEqual(["no_conversation"]);
    expect(v.callsOf("completeInboundCode")).toEqual([]);
    await settle();
    expect(texts()).toEqual([REPLY.askContact, REPLY.foreignContact, REPLY.noConversation]);
    expect(rep.sent[1].keyboard).toEqual(ASK);
  });
});

describe("viber", () => {
  const vb = (o: object) => json({ timestamp: 1, message_token: String(++seq), ...o });
  const opens = (user: string, context?: string) => vb({ event: "conversation_started", type: "open", context, user: { id: user } });
  const shares = (user: string, phone: string) =>
    vb({ event: "message", sender: { id: user }, message: { type: "contact", contact: { phone_number: phone } } });

  it("the deep link's context opens the chat and the welcome message (the delivery's answer) asks for the contact; the shared number verifies", async () => {
    const s = await sessions.create(LIVE, "phone", { channel: "viber" });
    expect(s.deepLink).toBe(`viber://pa?chatURI=icv-unit-bot&context=${sessionToken(KEY, s.row.id)}`);
    const opened = await inbound.deliver("viber", opens("vu1=", sessionToken(KEY, s.row.id)));
    expect(opened.outcomes).toEqual(["contact_requested"]);
    expect(JSON.parse(opened.answer!)).toEqual({ welcome: REPLY.askContact, keyboard: ASK });
    expect(await inbound.handle("viber", shares("vu1=", "37069199199"))).toEqual(["verified"]);
    expect((await store.byId(s.row.id))!).toMatchObject({ status: "verified", phone_number: ME });
    await settle();
    expect(rep.sent).toEqual([{ provider: "viber", to: "vu1=", text: REPLY.sessionVerified, keyboard: REMOVE }]);
  });

  it("a code's contact from another number is wrong_sender; a contact without a conversation is told what to do", async () => {
    v.codes.set("VB12CD", { channel: "viber", phone: ME });
    expect((await inbound.deliver("viber", opens("vu2=", "VB12CD"))).outcomes).toEqual(["contact_requested"]);
    expect(await inbound.handle("viber", shares("vu2=", SOMEONE))).toEqual(["wrong_sender"]);
    expect(v.callsOf("completeInboundCode")).toEqual([{ channel: "viber", code: "VB12CD", sender: SOMEONE, messageKey: `viber:${seq}` }]);
    expect(await inbound.handle("viber", shares("vu3=", ME))).toEqual(["no_conversation"]);
    // opening the bot without a context is answered with help, as the welcome message
    const plain = await inbound.deliver("viber", opens("vu4="));
    expect([plain.outcomes, JSON.parse(plain.answer!).welcome]).toEqual([["unrecognized"], REPLY.help]);
  });
});

describe("a session token", () => {
  it("a WhatsApp message with a session's pre-filled text verifies it with the sender's number", async () => {
    const s = await sessions.create(LIVE, "phone", { channel: "whatsapp" });
    const token = sessionToken(KEY, s.row.id);
    expect(await inbound.handle("whatsapp", waText("37069199199", `Verify my phone number: ${token}`))).toEqual(["verified"]);
    expect((await store.byId(s.row.id))!).toMatchObject({ status: "verified", phone_number: ME });
    await settle();
    expect(rep.sent).toEqual([{ provider: "whatsapp", to: "37069199199", text: REPLY.sessionVerified }]);
  });

  it("an auth session answered from another number fails and the sender is told why", async () => {
    const s = await sessions.create(LIVE, "auth", { channel: "whatsapp", phoneNumber: ME });
    expect(await inbound.handle("whatsapp", waText("37069100002", `Confirm sign-in: ${sessionToken(KEY, s.row.id)}`))).toEqual(["wrong_sender"]);
    expect((await store.byId(s.row.id))!.status).toBe("failed");
    await settle();
    expect(texts()).toEqual([REPLY.authFailed]);
  });

  it("Telegram: /start with the token of a live pending session asks for the contact, which verifies it; an unknown token is not recognised", async () => {
    const s = await sessions.create(LIVE, "auth", { channel: "telegram", phoneNumber: ME, type: "login" });
    const token = sessionToken(KEY, s.row.id);
    expect(await inbound.handle("telegram", tgText(503, `/start ${sessionToken(KEY, "auth_unknown")}`))).toEqual(["unknown"]);
    expect(await inbound.handle("telegram", tgText(503, `/start ${token}`))).toEqual(["contact_requested"]);
    expect(await inbound.handle("telegram", tgContact(503, "+37069199199"))).toEqual(["verified"]);
    expect((await store.byId(s.row.id))!).toMatchObject({ status: "verified", phone_number: ME });
    await settle();
    expect(texts()).toEqual([REPLY.unknown, REPLY.askContact, REPLY.sessionVerified]);
  });

  it("a session answers only over its own channel: a WhatsApp session's token texted by SMS is unknown there and the session stays pending", async () => {
    const s = await sessions.create(LIVE, "phone", { channel: "whatsapp" });
    expect(await inbound.handle("sms", sms(ME, sessionToken(KEY, s.row.id)))).toEqual(["unknown"]);
    expect((await store.byId(s.row.id))!.status).toBe("pending");
    await settle();
    expect(texts()).toEqual([REPLY.unknown]);
  });
});

describe("each provider message is handled once", () => {
  it("the same message delivered twice is done once and replied to once", async () => {
    v.codes.set("DUP123", { channel: "whatsapp", phone: ME });
    const body = waText("37069199199", "DUP123", "wamid.dup");
    expect(await inbound.handle("whatsapp", body)).toEqual(["verified"]);
    expect(await inbound.handle("whatsapp", body)).toEqual(["duplicate"]);
    const update = tgText(504, "hello");
    expect(await inbound.handle("telegram", update)).toEqual(["unrecognized"]);
    expect(await inbound.handle("telegram", update)).toEqual(["duplicate"]);
    await settle();
    expect(v.callsOf("completeInboundCode")).toHaveLength(1);
    expect(texts()).toEqual([REPLY.verified, REPLY.help]);
  });

  it("a message being handled elsewhere is busy; a failed handling is forgotten, so the provider's retry is handled afresh", async () => {
    await inbox.claimInbound("sms", "SM-busy", clock.now(), 60_000);
    expect(((await inbound.handle("sms", sms(ME, "BUSY12", "SM-busy")).catch((e: unknown) => e)) as AppError).code).toBe("service_unavailable");
    v.onCode = () => {
      throw new Error("verification service unreachable");
    };
    await expect(inbound.handle("sms", sms(ME, "RETRY1", "SM-retry"))).rejects.toThrow("unreachable");
    v.onCode = () => ({ outcome: "verified" });
    expect(await inbound.handle("sms", sms(ME, "RETRY1", "SM-retry"))).toEqual(["verified"]);
    await settle();
    expect(texts()).toEqual([REPLY.verified]);
  });
});

describe("unknown codes and the per-sender throttle", () => {
  it(`after ${SENDER_STRIKES} unknown codes in the window the sender is ignored, told once, on every channel, until the window passes`, async () => {
    const S = "+37069100003";
    v.codes.set("RIGHT1", { channel: "sms", phone: S });
    // a message without a code does not count
    expect(await inbound.handle("sms", sms(S, "hello"))).toEqual(["unrecognized"]);
    for (let i = 0; i < SENDER_STRIKES; i++) expect(await inbound.handle("sms", sms(S, `ZZ${String(i).padStart(4, "0")}`))).toEqual(["unknown_code"]);
    // now even the right code does nothing; one reply says so, also when messages arrive at once
    const together = await Promise.all([1, 2, 3].map(() => inbound.handle("sms", sms(S, "RIGHT1"))));
    expect(together).toEqual([["throttled"], ["throttled"], ["throttled"]]);
    expect(await inbound.handle("whatsapp", waText(S.slice(1), "RIGHT1"))).toEqual(["throttled"]);
    // another sender is heard
    expect(await inbound.handle("sms", sms(SOMEONE, "ZZ9999"))).toEqual(["unknown_code"]);
    await settle();
    expect(v.callsOf("completeInboundCode").filter((c) => c.code === "RIGHT1")).toEqual([]);
    expect(texts()).toEqual([REPLY.help, ...Array<string>(SENDER_STRIKES).fill(REPLY.unknown), REPLY.throttled, REPLY.unknown]);
    // an hour later the sender is heard again
    clock.advance(SENDER_WINDOW_MS);
    expect(await inbound.handle("sms", sms(S, "RIGHT1"))).toEqual(["verified"]);
  });

  it("a Telegram user sending unknown session tokens is throttled by user id", async () => {
    for (let i = 0; i < SENDER_STRIKES; i++)
      expect(await inbound.handle("telegram", tgText(505, `/start ${sessionToken(KEY, `sess_x${i}`)}`))).toEqual(["unknown"]);
    expect(await inbound.handle("telegram", tgText(505, "/start TG56EF"))).toEqual(["throttled"]);
    expect(await inbound.handle("telegram", tgText(506, "/start TG56EF"))).toEqual(["contact_requested"]);
    await settle();
    expect(rep.sent.filter((s) => s.to === "505").map((s) => s.text)).toEqual([...Array<string>(SENDER_STRIKES).fill(REPLY.unknown), REPLY.throttled]);
  });
});

describe("what is not handled", () => {
  it("updates without a message, delivery statuses, bots and group chats are ignored without a reply", async () => {
    expect(await inbound.handle("telegram", json({ update_id: ++seq, edited_message: { text: "ABC123" } }))).toEqual(["ignored"]);
    expect(await inbound.handle("whatsapp", waBody({ statuses: [{ id: "wamid.out", status: "read", recipient_id: "37069199199" }] }))).toEqual([]);
    expect(await inbound.handle("telegram", json(tgMessage(507, { text: "/start ABC123" }, { id: 507, type: "private" }, true)))).toEqual(["ignored"]);
    expect(await inbound.handle("telegram", json(tgMessage(508, { text: "/start ABC123" }, { id: -100123, type: "group" })))).toEqual(["ignored"]);
    await settle();
    expect(rep.sent).toEqual([]);
    expect(v.calls).toEqual([]);
  });

  it("a message without text (a picture, a sticker) changes nothing and gets the help text", async () => {
    expect(await inbound.handle("whatsapp", waText("37069199199", undefined))).toEqual(["unrecognized"]);
    expect(await inbound.handle("telegram", json(tgMessage(509, { sticker: { file_id: "x" } })))).toEqual(["unrecognized"]);
    await settle();
    expect(texts()).toEqual([REPLY.help, REPLY.help]);
    expect(v.calls).toEqual([]);
  });

  it("a body that is not the provider's message is refused", async () => {
    expect(((await inbound.handle("telegram", Buffer.from("not json")).catch((e: unknown) => e)) as AppError).code).toBe("validation_error");
    expect(((await inbound.handle("sms", Buffer.from("Body=ABC123")).catch((e: unknown) => e)) as AppError).code).toBe("validation_error");
  });
});

describe("replies", () => {
  it("without a reply client for the provider, the message still settles the state", async () => {
    inbound = inboundWith({});
    const s = await sessions.create(LIVE, "phone", { channel: "whatsapp" });
    expect(await inbound.handle("whatsapp", waText("37069199199", `Verify my phone number: ${sessionToken(KEY, s.row.id)}`))).toEqual(["verified"]);
    expect((await store.byId(s.row.id))!.status).toBe("verified");
    const t = await sessions.create(LIVE, "phone", { channel: "telegram" });
    expect(await inbound.handle("telegram", tgText(510, `/start ${sessionToken(KEY, t.row.id)}`))).toEqual(["contact_requested"]);
    expect(await inbound.handle("telegram", tgContact(510, ME))).toEqual(["verified"]);
    expect((await store.byId(t.row.id))!).toMatchObject({ status: "verified", phone_number: ME });
    await settle();
  });

  it("a reply goes out after the state change, and a failing reply is logged and never fails the update", async () => {
    const s = await sessions.create(LIVE, "phone", { channel: "whatsapp" });
    const seen: string[] = [];
    rep.onSend = async () => {
      seen.push((await store.byId(s.row.id))!.status);
      throw new Error("graph api down");
    };
    expect(await inbound.handle("whatsapp", waText("37069199199", `Verify my phone number: ${sessionToken(KEY, s.row.id)}`))).toEqual(["verified"]);
    await settle();
    // a client that throws at once is no different
    inbound = inboundWith({
      sms: {
        send: () => {
          throw new Error("twilio down");
        },
      },
    });
    expect(await inbound.handle("sms", sms(ME, "NOPE12"))).toEqual(["unknown_code"]);
    await settle();
    expect(seen).toEqual(["verified"]);
    const warned = log.lines.filter((l) => l.msg === "bot reply failed").map((l) => l.err);
    expect(warned.sort()).toEqual(["graph api down", "twilio down"]);
  });
});

describe("project templates", () => {
  it("a session's reply is its project's template when one renders, else the built-in text", async () => {
    const asked: Record<string, unknown>[] = [];
    let down = false;
    const projects = {
      async renderMessage(req: Record<string, unknown>) {
        asked.push(req);
        if (down) throw new Error("verification service down");
        return { found: req.type === "verification_success", message: { text: "Acme: your number is confirmed" } };
      },
    } as unknown as Client<typeof ProjectService>;
    sessions = new Sessions({ store, verification: v.client, config, clock, key: KEY, logger: log.logger, projects });
    inbound = inboundWith(rep.repliers);
    const answer = async (s: { row: { id: string } }) =>
      inbound.handle("whatsapp", waText("37069199199", `Verify my phone number: ${sessionToken(KEY, s.row.id)}`));
    expect(await answer(await sessions.create(LIVE, "phone", { channel: "whatsapp" }))).toEqual(["verified"]);
    // an auth session answered from another number has no template type: the built-in text, under
    // the project's business name when it has one (so the project is asked all the same)
    const auth = await sessions.create(LIVE, "auth", { channel: "whatsapp", phoneNumber: SOMEONE });
    expect(await answer(auth)).toEqual(["wrong_sender"]);
    down = true;
    expect(await answer(await sessions.create(LIVE, "phone", { channel: "whatsapp" }))).toEqual(["verified"]);
    await settle();
    expect(texts()).toEqual(["Acme: your number is confirmed", REPLY.authFailed, REPLY.sessionVerified]);
    expect(asked).toHaveLength(3);
    expect(asked[0]).toMatchObject({
      scope: { tenantId: LIVE.tenantId, environment: Environment.LIVE },
      projectId: undefined,
      channel: "whatsapp",
      type: "verification_success",
    });
    expect(log.lines.filter((l) => l.msg === "project reply failed; built-in text used").map((l) => l.err)).toEqual(["verification service down"]);
  });
});
