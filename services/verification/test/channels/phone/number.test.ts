/** Phone numbers: the international form every phone channel takes, and the form a provider attests. */
import { describe, it, expect } from "vitest";
import { attestedPhone } from "../../../src/channels/phone/number.ts";
import { expectInvalid, normalize } from "../helpers.ts";

describe("phone numbers", () => {
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
    expect(normalize("phone", "sms", raw)).toEqual({ value: expected, canonical: expected });
  });

  it("ignores the channel", () => {
    for (const channel of ["whatsapp", "telegram", "sms"]) {
      expect(normalize("phone", channel, "+370 691 99199").value).toBe("+37069199199");
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

describe("a number a provider attested", () => {
  it("takes a possible number the strict check refuses (a phone a session captured); nothing else", () => {
    // +1 555 01xx: possible, not valid (a range libphonenumber's validity data does not hold)
    expect(() => normalize("phone", "telegram", "+1 555 010 0000")).toThrow();
    expect(attestedPhone("+1 (555) 010-0000")).toBe("+15550100000");
    expect(attestedPhone("not a number")).toBeUndefined();
  });
});
