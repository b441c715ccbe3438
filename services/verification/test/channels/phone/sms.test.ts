/** phone/sms: the sms: link with the code, or a code we send by SMS (Twilio). */
import { describe, it, expect } from "vitest";
import { sms } from "../../../src/channels/phone/sms.ts";
import { challenge, configured } from "../helpers.ts";
import { outboundCases, reverseOtpCases } from "./phone-cases.ts";

describe("phone/sms", () => {
  it("sms:+<number>?body=CODE, with the + added when configured without it", () => {
    const c = challenge("phone", "sms", "+37069199199", { env: "live", config: configured });
    expect(c.deepLink).toBe(`sms:+15557654321?body=${c.code}`);
    expect(c.showCode).toBe(true);
  });

  it("test keys without providers get the documented placeholder number", () => {
    const c = challenge("phone", "sms", "+37069199199");
    expect(c.deepLink).toBe(`sms:+15550002000?body=${c.code}`);
  });

  it("a fresh code for every challenge", () => {
    const codes = new Set(Array.from({ length: 50 }, () => challenge("phone", "sms", "+37069199199").code));
    expect(codes.size).toBe(50);
  });

  reverseOtpCases(sms, (code) => code, "Confirmed by a text message from this number to our SMS number.");
  outboundCases(sms, /by SMS/, "SMS");
});
