import { createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTelegramApi, startTwilioApi, startWhatsAppApi } from "../../../../test/support/providers.ts";
import { startReceiver, type Receiver } from "../../../../test/support/receiver.ts";
import { secretTokenValid, twilioSignature, twilioSignatureValid, whatsappSignature, whatsappSignatureValid } from "../../src/messaging/index.ts";

/** Twilio's scheme written out again, independently of the code under test. */
function referenceTwilio(token: string, url: string, params: Record<string, string>): string {
  const names = Object.keys(params).sort((a, b) => Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8")));
  const data = [url, ...names.map((n) => n + params[n])].join("");
  return createHmac("sha1", Buffer.from(token, "utf8")).update(Buffer.from(data, "utf8")).digest().toString("base64");
}

describe("WhatsApp X-Hub-Signature-256", () => {
  const secret = "app-secret-0123456789abcdef";
  const body = Buffer.from('{"object":"whatsapp_business_account","entry":[]}');

  it("is sha256= and the hex HMAC-SHA256 (RFC 4231 test case 2)", () => {
    expect(whatsappSignature("Jefe", "what do ya want for nothing?")).toBe("sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    expect(
      whatsappSignatureValid("Jefe", Buffer.from("what do ya want for nothing?"), "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
    ).toBe(true);
  });

  it("accepts the signature of exactly this body under this secret", () => {
    const header = whatsappSignature(secret, body);
    expect(whatsappSignatureValid(secret, body, header)).toBe(true);
    expect(whatsappSignatureValid(secret, body, `sha256=${header.slice(7).toUpperCase()}`)).toBe(true);
  });

  it("refuses a tampered body, another secret, and missing or garbled headers", () => {
    const header = whatsappSignature(secret, body);
    const tampered = Buffer.from(body);
    tampered[tampered.length - 2] ^= 1;
    expect(whatsappSignatureValid(secret, tampered, header)).toBe(false);
    expect(whatsappSignatureValid("another-secret-0123456789", body, header)).toBe(false);
    expect(whatsappSignatureValid("", body, whatsappSignature("", body))).toBe(false);
    const hex = header.slice(7);
    for (const bad of [
      undefined,
      "",
      "sha256=",
      hex,
      `sha1=${hex}`,
      `sha256=${hex.slice(2)}`,
      `sha256=${hex}00`,
      `sha256=${"z".repeat(64)}`,
      `sha256=${hex.slice(0, -1)}g`,
      "garbage",
      "sha256=\u00e9".repeat(9),
    ]) {
      expect(whatsappSignatureValid(secret, body, bad)).toBe(false);
    }
  });
});

describe("Twilio X-Twilio-Signature", () => {
  // The worked example of Twilio's request-validation documentation (auth token 12345).
  const url = "https://mycompany.com/myapp.php?foo=1&bar=2";
  const docParams = (caller: string) => ({
    CallSid: "CA1234567890ABCDE",
    Caller: caller,
    Digits: "1234",
    From: caller,
    To: "+18005551212",
  });

  it("matches Twilio's documented examples", () => {
    expect(twilioSignature("12345", url, docParams("+14158675309"))).toBe("RSOYDt4T1cUTdK1PDd93/VVr8B8=");
    expect(twilioSignature("12345", url, docParams("+14158675310"))).toBe("GvWf1cFY/Q7PnoempGyD5oXAezc=");
    expect(twilioSignatureValid("12345", url, docParams("+14158675309"), "RSOYDt4T1cUTdK1PDd93/VVr8B8=")).toBe(true);
    expect(twilioSignatureValid("12345", url, docParams("+14158675310"), "GvWf1cFY/Q7PnoempGyD5oXAezc=")).toBe(true);
  });

  it("agrees with an independent implementation, whatever the parameter order and case", () => {
    const params = {
      Body: "ICV-1234 héllo & bye",
      From: "+15551234567",
      To: "+15550009999",
      body: "lower",
      AccountSid: "AC1",
      MessageSid: "SM1",
      NumMedia: "0",
    };
    const reversed = Object.fromEntries(Object.entries(params).reverse());
    const sig = twilioSignature("tok", "https://icv.example/hooks/sms", params);
    expect(sig).toBe(referenceTwilio("tok", "https://icv.example/hooks/sms", params));
    expect(twilioSignature("tok", "https://icv.example/hooks/sms", reversed)).toBe(sig);
    expect(twilioSignature("tok", "https://icv.example/hooks/sms", {})).toBe(
      createHmac("sha1", "tok").update("https://icv.example/hooks/sms").digest("base64"),
    );
  });

  it("refuses a changed parameter, an added parameter, another URL, another token, and missing or garbled headers", () => {
    const params = docParams("+14158675309");
    const good = "RSOYDt4T1cUTdK1PDd93/VVr8B8=";
    expect(twilioSignatureValid("12345", url, { ...params, Digits: "1235" }, good)).toBe(false);
    expect(twilioSignatureValid("12345", url, { ...params, Extra: "" }, good)).toBe(false);
    expect(twilioSignatureValid("12345", "https://mycompany.com/myapp.php?foo=1&bar=3", params, good)).toBe(false);
    expect(twilioSignatureValid("12346", url, params, good)).toBe(false);
    expect(twilioSignatureValid("", url, params, twilioSignature("", url, params))).toBe(false);
    for (const bad of [undefined, "", good.slice(0, -1), `${good}=`, good.toLowerCase(), "garbage", "\u00e9".repeat(28)]) {
      expect(twilioSignatureValid("12345", url, params, bad)).toBe(false);
    }
  });

  it("accepts a URL on the default port signed with or without the port, and nothing else", () => {
    const params = docParams("+14158675309");
    const good = "RSOYDt4T1cUTdK1PDd93/VVr8B8=";
    expect(twilioSignatureValid("12345", "https://mycompany.com:443/myapp.php?foo=1&bar=2", params, good)).toBe(true);
    expect(twilioSignatureValid("12345", url, params, twilioSignature("12345", "https://mycompany.com:443/myapp.php?foo=1&bar=2", params))).toBe(true);
    expect(twilioSignatureValid("12345", "https://mycompany.com:8443/myapp.php?foo=1&bar=2", params, good)).toBe(false);
    expect(twilioSignatureValid("12345", "http://mycompany.com/myapp.php?foo=1&bar=2", params, good)).toBe(false);
    expect(twilioSignatureValid("12345", url, params, twilioSignature("12345", "http://mycompany.com:80/myapp.php?foo=1&bar=2", params))).toBe(false);
  });
});

describe("Telegram secret token", () => {
  it("accepts only the exact secret", () => {
    expect(secretTokenValid("s3cret_token-ABCDEFGH", "s3cret_token-ABCDEFGH")).toBe(true);
    for (const bad of [undefined, "", "s3cret_token-ABCDEFG", "s3cret_token-ABCDEFGHI", "S3cret_token-ABCDEFGH", " s3cret_token-ABCDEFGH"]) {
      expect(secretTokenValid("s3cret_token-ABCDEFGH", bad)).toBe(false);
    }
    expect(secretTokenValid("", "")).toBe(false);
    expect(secretTokenValid("", undefined)).toBe(false);
  });
});

describe("the stand-ins sign deliveries as the providers do", () => {
  let hook: Receiver;
  beforeAll(async () => {
    hook = await startReceiver(200);
  });
  afterAll(() => hook.close());
  const last = () => hook.requests[hook.requests.length - 1];

  it("WhatsApp: X-Hub-Signature-256 over the raw body; another secret or none when asked", async () => {
    const secret = "wa-app-secret-0123456789";
    const wa = await startWhatsAppApi({ phoneNumberId: "1098765432", accessToken: "EAAG0123456789abcdef", appSecret: secret });
    try {
      expect(await wa.userSends(hook.url, { from: "15551234567", text: "ICV-1" })).toEqual({ status: 200, body: "ok" });
      expect(whatsappSignatureValid(secret, Buffer.from(last().body), last().headers["x-hub-signature-256"] as string)).toBe(true);
      await wa.userSends(hook.url, { from: "15551234567", text: "ICV-1" }, { signWith: "someone-else-secret" });
      expect(whatsappSignatureValid(secret, Buffer.from(last().body), last().headers["x-hub-signature-256"] as string)).toBe(false);
      await wa.userSends(hook.url, { from: "15551234567", text: "ICV-1" }, { signWith: null });
      expect(last().headers["x-hub-signature-256"]).toBeUndefined();
    } finally {
      await wa.close();
    }
  });

  it("Twilio: X-Twilio-Signature over the hook URL (or signedUrl) and the form fields", async () => {
    const token = "twilio-auth-token-0123456789";
    const tw = await startTwilioApi({ accountSid: `AC${"a".repeat(32)}`, authToken: token });
    const form = () => Object.fromEntries(new URLSearchParams(last().body));
    try {
      await tw.userSends(hook.url, { from: "+15551234567", to: "+15550009999", body: "ICV-2 & more" });
      expect(last().headers["content-type"]).toBe("application/x-www-form-urlencoded");
      expect(form()).toMatchObject({ From: "+15551234567", To: "+15550009999", Body: "ICV-2 & more", SmsStatus: "received" });
      expect(twilioSignatureValid(token, hook.url, form(), last().headers["x-twilio-signature"] as string)).toBe(true);
      expect(last().headers["x-twilio-signature"]).toBe(referenceTwilio(token, hook.url, form()));

      await tw.userSends(hook.url, { from: "+15551234567", to: "+15550009999", body: "x" }, { signedUrl: "https://icv.example/hooks/sms" });
      expect(twilioSignatureValid(token, "https://icv.example/hooks/sms", form(), last().headers["x-twilio-signature"] as string)).toBe(true);
      expect(twilioSignatureValid(token, hook.url, form(), last().headers["x-twilio-signature"] as string)).toBe(false);

      await tw.userSends(hook.url, { from: "+15551234567", to: "+15550009999", body: "x" }, { signWith: null });
      expect(last().headers["x-twilio-signature"]).toBeUndefined();
    } finally {
      await tw.close();
    }
  });

  it("Telegram: the secret token given to setWebhook, another, or none", async () => {
    const tg = await startTelegramApi({ token: "7000000002:AAHk3xQ9vZ_secretpartofthetoken-0123", botUsername: "icv_test_bot" });
    try {
      const update = tg.textUpdate({ userId: 1 }, "/start a");
      await tg.userSends(hook.url, update, { secret: "explicit-secret-0123" });
      expect(last().headers["x-telegram-bot-api-secret-token"]).toBe("explicit-secret-0123");
      await tg.userSends(hook.url, update);
      expect(last().headers["x-telegram-bot-api-secret-token"]).toBeUndefined();
      await fetch(`${tg.url}/bot7000000002:AAHk3xQ9vZ_secretpartofthetoken-0123/setWebhook`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ url: hook.url, secret_token: "given-secret-0123456" }),
      });
      await tg.userSends(hook.url, update);
      expect(secretTokenValid("given-secret-0123456", last().headers["x-telegram-bot-api-secret-token"] as string)).toBe(true);
      await tg.userSends(hook.url, update, { secret: null });
      expect(last().headers["x-telegram-bot-api-secret-token"]).toBeUndefined();
    } finally {
      await tg.close();
    }
  });
});
