// The whatsapp provider file as the table uses it: configuration, needs, address and deep link,
// the hook (signature and Meta's handshake) and deliveries read into common messages.
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config.ts";
import { whatsapp, whatsappSignature } from "../../src/messaging/whatsapp.ts";

const SECRET = "whatsapp-app-secret-0123456789";

describe("whatsapp provider", () => {
  it("needs number, phone-number id, access token and app secret; writes to our number", () => {
    expect(whatsapp.missing(parseConfig({}))).toEqual(["WHATSAPP_PHONE_NUMBER", "WHATSAPP_PHONE_NUMBER_ID", "WHATSAPP_ACCESS_TOKEN", "WHATSAPP_APP_SECRET"]);
    const c = parseConfig({ WHATSAPP_PHONE_NUMBER: "15550001234", WHATSAPP_APP_SECRET: SECRET, WHATSAPP_VERIFY_TOKEN: "verify-token-0123456789" });
    expect(whatsapp.address(c)).toBe("+15550001234");
    expect(whatsapp.address(parseConfig({}))).toBe("+15550001000");
    expect(whatsapp.deepLink("+15550001234", "tok", "Verify my phone number: tok")).toBe(
      "https://wa.me/15550001234?text=Verify%20my%20phone%20number%3A%20tok",
    );
    expect(() => parseConfig({ WHATSAPP_PHONE_NUMBER_ID: "abc" })).toThrow(/WHATSAPP_PHONE_NUMBER_ID/);
  });

  it("its hook checks X-Hub-Signature-256 and answers the handshake only with the verify token", () => {
    const hook = whatsapp.hook(parseConfig({ WHATSAPP_APP_SECRET: SECRET, WHATSAPP_VERIFY_TOKEN: "verify-token-0123456789" }))!;
    const raw = Buffer.from('{"object":"whatsapp_business_account","entry":[]}');
    const sig = whatsappSignature(SECRET, raw);
    expect(hook.verify({ body: raw, header: () => sig, url: "" })).toBe(true);
    expect(hook.verify({ body: raw, header: () => undefined, url: "" })).toBe(false);
    expect(hook.handshake!({ "hub.mode": "subscribe", "hub.verify_token": "verify-token-0123456789", "hub.challenge": "42" })).toBe("42");
    expect(hook.handshake!({ "hub.mode": "subscribe", "hub.verify_token": "wrong-token-0123456789", "hub.challenge": "42" })).toBeUndefined();
    expect(whatsapp.hook(parseConfig({}))).toBeUndefined();
  });

  it("reads a delivery's messages with the sender's number", () => {
    const raw = JSON.stringify({
      object: "whatsapp_business_account",
      entry: [{ changes: [{ value: { messages: [{ from: "37069100001", id: "wamid.1", timestamp: "1", type: "text", text: { body: "AB12CD" } }] } }] }],
    });
    expect(whatsapp.parse(Buffer.from(raw))).toEqual([{ id: "wamid.1", replyTo: "37069100001", sender: { phone: "37069100001" }, text: "AB12CD" }]);
  });
});
