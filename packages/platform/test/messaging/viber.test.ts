// The viber provider file: its configuration keys, what a live channel needs, the deep link, the
// X-Viber-Content-Signature check, callbacks read into common messages (a 64-bit message_token
// kept exact), and the REST bot API client against the stand-in (send_message's rules, errors
// without the token).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startViberApi, type ViberApi } from "../../../../test/support/providers.ts";
import { startReceiver, type Receiver } from "../../../../test/support/receiver.ts";
import { parseConfig } from "../../src/config.ts";
import { ViberApiError, ViberClient, parseViberCallback, viber, viberSignature, viberSignatureValid } from "../../src/messaging/viber.ts";

const TOKEN = "4453b6ac12345678-e02c5f12174805f9-daec6fa3d34a2f1e";
const body = (o: object) => Buffer.from(JSON.stringify(o));

describe("viber configuration", () => {
  it("validates its keys and says what a live channel lacks", () => {
    const c = parseConfig({});
    expect(viber.missing(c)).toEqual(["VIBER_BOT_URI", "VIBER_AUTH_TOKEN"]);
    expect(viber.address(c)).toBe("icv-test-bot");
    const set = parseConfig({ VIBER_BOT_URI: "acme-bot", VIBER_AUTH_TOKEN: TOKEN });
    expect(viber.missing(set)).toEqual([]);
    expect(viber.address(set)).toBe("acme-bot");
    expect(set.VIBER_API_URL).toBe("https://chatapi.viber.com/pa");
    expect(() => parseConfig({ VIBER_BOT_URI: "has space" })).toThrow(/VIBER_BOT_URI/);
    expect(() => parseConfig({ VIBER_AUTH_TOKEN: "short" })).toThrow(/VIBER_AUTH_TOKEN/);
    expect(() => parseConfig({ VIBER_SENDER_NAME: "x".repeat(29) })).toThrow(/VIBER_SENDER_NAME/);
  });

  it("links viber://pa with the chat URI and the payload as context", () => {
    expect(viber.deepLink("acme-bot", "AB12CD", "ignored")).toBe("viber://pa?chatURI=acme-bot&context=AB12CD");
    expect(viber.expectedMessage("AB12CD", "ignored")).toBe("AB12CD");
  });
});

describe("viber callbacks", () => {
  const raw = Buffer.from('{"event":"message","message_token":5741311803571721087,"sender":{"id":"01234567890A="},"message":{"type":"text","text":"hi"}}');

  it("the signature is hex HMAC-SHA256 of the raw body under the auth token", () => {
    const sig = viberSignature(TOKEN, raw);
    expect(sig).toMatch(/^[0-9a-f]{64}$/);
    expect(viberSignatureValid(TOKEN, raw, sig)).toBe(true);
    expect(viberSignatureValid(TOKEN, raw, sig.toUpperCase())).toBe(true);
    expect(viberSignatureValid(TOKEN, Buffer.concat([raw, Buffer.from(" ")]), sig)).toBe(false);
    expect(viberSignatureValid("another-token-0123456789", raw, sig)).toBe(false);
    for (const bad of [undefined, "", `sha256=${sig}`, sig.slice(1)]) expect(viberSignatureValid(TOKEN, raw, bad)).toBe(false);
    const hook = viber.hook(parseConfig({ VIBER_AUTH_TOKEN: TOKEN }))!;
    expect(hook.verify({ body: raw, header: (n) => (n === "x-viber-content-signature" ? sig : undefined), url: "" })).toBe(true);
    expect(hook.verify({ body: raw, header: () => undefined, url: "" })).toBe(false);
    expect(viber.hook(parseConfig({}))).toBeUndefined();
  });

  it("reads conversation_started (context, opening), text and the shared contact; other events give nothing", () => {
    expect(parseViberCallback(raw)).toEqual([{ id: "5741311803571721087", replyTo: "01234567890A=", sender: { user: "01234567890A=" }, text: "hi" }]);
    expect(
      parseViberCallback(body({ event: "conversation_started", message_token: "4912661846655238145", type: "open", context: "TOKEN1", user: { id: "u1" } })),
    ).toEqual([{ id: "4912661846655238145", replyTo: "u1", sender: { user: "u1" }, context: "TOKEN1", opening: true }]);
    const contact = parseViberCallback(
      body({ event: "message", message_token: 1, sender: { id: "u2" }, message: { type: "contact", contact: { name: "Me", phone_number: "37069100001" } } }),
    );
    expect(contact).toEqual([{ id: "1", replyTo: "u2", sender: { user: "u2" }, text: undefined, contact: { phone: "37069100001", own: true } }]);
    expect(parseViberCallback(body({ event: "webhook", timestamp: 1, message_token: 2 }))).toEqual([]);
    expect(parseViberCallback(body({ event: "delivered", message_token: 3, user_id: "u" }))).toEqual([]);
    expect(parseViberCallback("not json")).toBeUndefined();
    expect(parseViberCallback(body({ update_id: 1 }))).toBeUndefined();
  });
});

describe("the viber client against the stand-in", () => {
  let vb: ViberApi;
  let client: ViberClient;
  let hook: Receiver;
  beforeAll(async () => {
    hook = await startReceiver(200);
    vb = await startViberApi({ authToken: TOKEN });
    client = new ViberClient({ apiUrl: vb.url, authToken: TOKEN, senderName: "Acme", timeoutMs: 2_000 });
  });
  afterAll(async () => {
    await vb?.close();
    await hook?.close();
  });

  it("send_message reaches a subscribed user with the share-phone keyboard; an unsubscribed one is status 6", async () => {
    const err = await client.sendMessage("u-not-yet", "hello").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ViberApiError);
    expect((err as ViberApiError).status).toBe(6);
    // a user who has written to the bot is subscribed
    expect((await vb.userSends(hook.url, { id: "u-sub" }, "hi")).status).toBe(200);
    await client.sendMessage("u-sub", "Share your number", { requestContact: "Share my phone number" });
    const sent = await vb.waitForSent((m) => m.receiver === "u-sub");
    expect(sent).toMatchObject({ text: "Share your number", sharePhone: "Share my phone number", authToken: TOKEN });
    expect(sent.body).toMatchObject({ sender: { name: "Acme" }, type: "text", min_api_version: 3 });
    // the callback was signed as Viber signs it
    const last = hook.requests[hook.requests.length - 1];
    expect(viberSignatureValid(TOKEN, Buffer.from(last.body), last.headers["x-viber-content-signature"] as string)).toBe(true);
  });

  it("a wrong token is invalidAuthToken, and the error never carries the token", async () => {
    const wrong = new ViberClient({ apiUrl: vb.url, authToken: "wrong-token-0123456789abcdef", senderName: "Acme" });
    const err = (await wrong.sendMessage("u", "x").catch((e: unknown) => e)) as ViberApiError;
    expect(err.status).toBe(2);
    expect(err.message).not.toContain("wrong-token");
    const welcome = JSON.parse(
      viber.messenger(parseConfig({ VIBER_AUTH_TOKEN: TOKEN, VIBER_SENDER_NAME: "Acme" }))!.welcome!("Share?", { requestContact: "Share" }),
    );
    expect(welcome).toMatchObject({ sender: { name: "Acme" }, type: "text", text: "Share?", min_api_version: 3 });
    expect(welcome.keyboard.Buttons[0]).toMatchObject({ ActionType: "share-phone", Text: "Share" });
    expect(welcome.receiver).toBeUndefined();
  });
});
