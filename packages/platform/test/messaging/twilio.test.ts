// The sms (Twilio) provider file as the table uses it: configuration, address and the sms: deep
// link, the X-Twilio-Signature hook over {PUBLIC_BASE_URL}/hooks/sms, and the inbound form.
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config.ts";
import { sms, twilioSignature } from "../../src/messaging/twilio.ts";

const SID = `AC${"0".repeat(32)}`;
const AUTH = "twilio-auth-token-0123456789";

describe("sms provider", () => {
  it("needs our number, the account SID and the auth token", () => {
    expect(sms.missing(parseConfig({}))).toEqual(["SMS_PHONE_NUMBER", "TWILIO_ACCOUNT_SID", "TWILIO_AUTH_TOKEN"]);
    expect(sms.missing(parseConfig({ SMS_PHONE_NUMBER: "+15550002001", TWILIO_ACCOUNT_SID: SID, TWILIO_AUTH_TOKEN: AUTH }))).toEqual([]);
    expect(sms.address(parseConfig({}))).toBe("+15550002000");
    expect(sms.deepLink("+15550002000", "t", "Verify my phone number: t")).toBe("sms:+15550002000?body=Verify%20my%20phone%20number%3A%20t");
    expect(() => parseConfig({ TWILIO_ACCOUNT_SID: "AC12" })).toThrow(/TWILIO_ACCOUNT_SID/);
  });

  it("its hook checks Twilio's signature of the public hook URL and the form, and answers empty TwiML", () => {
    const hook = sms.hook(parseConfig({ TWILIO_AUTH_TOKEN: AUTH }))!;
    const url = "https://icv.example/hooks/sms";
    const params = { MessageSid: "SM1", From: "+37069100001", To: "+15550002000", Body: "AB12CD" };
    const body = Buffer.from(new URLSearchParams(params).toString());
    const sig = twilioSignature(AUTH, "https://icv.example/hooks/sms", params);
    expect(hook.verify({ body, header: () => sig, url })).toBe(true);
    expect(hook.verify({ body, header: () => twilioSignature(AUTH, "https://other.example/hooks/sms", params), url })).toBe(false);
    expect(hook.verify({ body, header: () => sig, url: "https://other.example/hooks/sms" })).toBe(false);
    expect(hook.answer.type).toBe("text/xml");
    expect(sms.parse(body)).toEqual([{ id: "SM1", replyTo: "+37069100001", sender: { phone: "+37069100001" }, text: "AB12CD" }]);
    expect(sms.parse(Buffer.from("From=x"))).toBeUndefined();
  });
});
