/** phone/whatsapp: the wa.me link with the code, or a code we send by a WhatsApp template. */
import { describe, it, expect } from "vitest";
import { messagingProviders } from "@icv/platform";
import { whatsapp } from "../../../src/channels/phone/whatsapp.ts";
import { challenge, configured } from "../helpers.ts";
import { outboundCases, reverseOtpCases } from "./phone-cases.ts";

describe("phone/whatsapp", () => {
  it("https://wa.me/<digits>?text=CODE, code shown", () => {
    const c = challenge("phone", "whatsapp", "+37069199199", { env: "live", config: configured });
    expect(c.code).toMatch(/^[A-Z0-9]{6}$/);
    expect(c.showCode).toBe(true);
    expect(c.deepLink).toBe(`https://wa.me/15551234567?text=${c.code}`);
    expect(c.instruction).toContain(c.code!);
    expect(c.instruction).toContain("+15551234567");
  });

  it("test keys without providers get the documented placeholder number", () => {
    expect(Object.fromEntries(messagingProviders().map(([name, p]) => [name, p.placeholder]))).toEqual({
      whatsapp: "+15550001000",
      telegram: "@icv_test_bot",
      sms: "+15550002000",
      viber: "icv-test-bot",
    });
    const wa = challenge("phone", "whatsapp", "+37069199199");
    expect(wa.deepLink).toBe(`https://wa.me/15550001000?text=${wa.code}`);
  });

  reverseOtpCases(whatsapp, (code) => code, "Confirmed by a message from this number to our WhatsApp number.");
  outboundCases(whatsapp, /by WhatsApp/, "WhatsApp message");
});
