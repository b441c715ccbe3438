/** The phone channel: number normalization and the reverse-OTP / outbound challenges. */
import { describe, it, expect } from "vitest";
import { normalizeIdentifier, TEST_PLACEHOLDERS } from "../../src/channels/index.ts";
import { expectInvalid, configured, challenge } from "./helpers.ts";
import { phone } from "../../src/channels/phone.ts";
import { CTX, pending, rejection } from "./helpers.ts";

describe("phone", () => {
  const valid: Array<[string, string]> = [
    ["+370 691 99199", "+37069199199"],
    ["+1 (415) 555-2671", "+14155552671"],
    ["+37069199199", "+37069199199"],
    ["00370 691 99199", "+37069199199"],
    ["0014155552671", "+14155552671"],
    ["  +44 20 7946 0958  ", "+442079460958"],
    ["+49 30 901820", "+4930901820"],
    ["+86 138 0013 8000", "+8613800138000"],
    ["+33.1.42.68.53.00", "+33142685300"],
    ["+1/415/555/2671", "+14155552671"],
  ];
  it.each(valid)("normalizes %j to %s", (raw, expected) => {
    expect(normalizeIdentifier("phone", "sms", raw)).toEqual({ value: expected, canonical: expected });
  });

  it("ignores the channel", () => {
    for (const channel of ["whatsapp", "telegram", "sms"]) {
      expect(normalizeIdentifier("phone", channel, "+370 691 99199").value).toBe("+37069199199");
    }
  });

  const invalid: Array<[string, string]> = [
    ["national format without +", "37069199199"],
    ["national format with trunk 0", "(415) 555-2671"],
    ["single 0 prefix", "0370 691 99199"],
    ["too short", "+12"],
    ["too long", "+370691991990000"],
    ["only plus", "+"],
    ["double plus", "++14155552671"],
    ["plus in the middle", "+1415+5552671"],
    ["trailing letters", "+1 415 555 2671 abc"],
    ["vanity letters", "+1 800 FLOWERS"],
    ["extension", "+1-415-555-2671 ext. 5"],
    ["RFC 3966 extension", "+14155552671;ext=1"],
    ["tel: URI", "tel:+14155552671"],
    ["unknown country code", "+999 123 456 789"],
    ["invalid number for country", "+1 015 555 2671"],
    ["email", "user@example.com"],
  ];
  it.each(invalid)("rejects %s", (_name, raw) => {
    expectInvalid("phone", "sms", raw);
  });
});

// ---------------------------------------------------------------------------------------------
// email

describe("phone deep links", () => {
  it("whatsapp: https://wa.me/<digits>?text=CODE, code shown", () => {
    const c = challenge("phone", "whatsapp", "+37069199199", { env: "live", config: configured });
    expect(c.code).toMatch(/^[A-Z0-9]{6}$/);
    expect(c.showCode).toBe(true);
    expect(c.deepLink).toBe(`https://wa.me/15551234567?text=${c.code}`);
    expect(c.instruction).toContain(c.code!);
    expect(c.instruction).toContain("+15551234567");
  });

  it("telegram: https://t.me/<bot>?start=CODE", () => {
    const c = challenge("phone", "telegram", "+37069199199", { env: "live", config: configured });
    expect(c.deepLink).toBe(`https://t.me/acme_verify_bot?start=${c.code}`);
    expect(c.showCode).toBe(true);
  });

  it("sms: sms:+<number>?body=CODE, with the + added when configured without it", () => {
    const c = challenge("phone", "sms", "+37069199199", { env: "live", config: configured });
    expect(c.deepLink).toBe(`sms:+15557654321?body=${c.code}`);
  });

  it("test keys without providers get the documented placeholders", () => {
    expect(TEST_PLACEHOLDERS).toEqual({ telegramBot: "icv_test_bot", whatsappNumber: "+15550001000", smsNumber: "+15550002000", viberBot: "icv-test-bot" });
    const wa = challenge("phone", "whatsapp", "+37069199199");
    expect(wa.deepLink).toBe(`https://wa.me/15550001000?text=${wa.code}`);
    const tg = challenge("phone", "telegram", "+37069199199");
    expect(tg.deepLink).toBe(`https://t.me/icv_test_bot?start=${tg.code}`);
    const sms = challenge("phone", "sms", "+37069199199");
    expect(sms.deepLink).toBe(`sms:+15550002000?body=${sms.code}`);
    const vb = challenge("phone", "viber", "+37069199199");
    expect(vb.deepLink).toBe(`viber://pa?chatURI=icv-test-bot&context=${vb.code}`);
  });

  it("a fresh code for every challenge", () => {
    const codes = new Set(Array.from({ length: 50 }, () => challenge("phone", "sms", "+37069199199").code));
    expect(codes.size).toBe(50);
  });
});

describe("phone evidence (complete)", () => {
  it("reverse OTP: a typed code is refused, only the message from the phone completes it", async () => {
    const v = pending({ type: "phone", channel: "whatsapp", identifier: "+37069199199", code: "ABC123", delivery: "inbound" });
    expect(await rejection(() => phone.complete(v, { challengeCode: "ABC123" }, CTX))).toBe("invalid_state");
  });

  it("outbound: the code sent to the number proves otp; a wrong code or another number does not", async () => {
    const v = pending({ type: "phone", channel: "sms", identifier: "+37069199199", code: "ABC123", delivery: "outbound" });
    expect(await phone.complete(v, { challengeCode: "abc123" }, CTX)).toEqual({ ok: true, method: "otp" });
    expect(await phone.complete(v, { challengeCode: "ABC124" }, CTX)).toEqual({
      ok: false,
      failure: ["invalid_code", "the code is not correct"],
    });
    expect((await phone.complete(v, { challengeCode: "ABC123", sourceIdentifier: "+37069199198" }, CTX)).ok).toBe(false);
    expect((await phone.complete(v, { challengeCode: "ABC123", sourceIdentifier: "00370 691 99199" }, CTX)).ok).toBe(true);
  });

  it("only sms and whatsapp can send a code to a number", () => {
    expect(phone.delivery!("sms", undefined)).toBe("inbound");
    expect(phone.delivery!("whatsapp", "outbound")).toBe("outbound");
    expect(() => phone.delivery!("telegram", "outbound")).toThrow(/cannot send a code/);
  });
});
