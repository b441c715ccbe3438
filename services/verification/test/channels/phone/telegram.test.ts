/** phone/telegram: the t.me link that starts our bot with the code; Telegram cannot message a number first. */
import { describe, it, expect } from "vitest";
import { telegram } from "../../../src/channels/phone/telegram.ts";
import { challenge, configured, options } from "../helpers.ts";
import { reverseOtpCases } from "./phone-cases.ts";

describe("phone/telegram", () => {
  it("https://t.me/<bot>?start=CODE", () => {
    const c = challenge("phone", "telegram", "+37069199199", { env: "live", config: configured });
    expect(c.deepLink).toBe(`https://t.me/acme_verify_bot?start=${c.code}`);
    expect(c.showCode).toBe(true);
  });

  it("test keys without providers get the documented placeholder bot", () => {
    const c = challenge("phone", "telegram", "+37069199199");
    expect(c.deepLink).toBe(`https://t.me/icv_test_bot?start=${c.code}`);
  });

  it("cannot send a code to a number: delivery outbound is refused, the page offers inbound only, nothing is sent", () => {
    expect(options("phone", "telegram", { delivery: "outbound" })).toEqual({
      refused: "validation_error",
      message: "delivery outbound needs channel sms or whatsapp (telegram cannot send a code to a number); use delivery inbound",
      details: [{ field: "delivery", message: "not on this channel", code: "invalid" }],
    });
    expect(telegram.form.deliveries).toEqual([{ way: "inbound", label: "Send a code from my phone" }]);
    expect(telegram.sends).toBeUndefined();
  });

  reverseOtpCases(telegram, (code) => `/start ${code}`, "Confirmed by a message from this number to our Telegram bot.");
});
