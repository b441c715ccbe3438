/** email/email: address normalization, the mailed code and its evidence. */
import { describe, it, expect } from "vitest";
import { email } from "../../../src/channels/email/email.ts";
import { bare, challenge, configured, CTX, expectInvalid, normalize, options, pending, rejection, takenOptions } from "../helpers.ts";

describe("email", () => {
  const valid: Array<[string, string]> = [
    ["John.Doe+tag@Example.COM", "john.doe+tag@example.com"],
    ["John.Doe@Example.COM", "john.doe@example.com"],
    ["  user@example.com  ", "user@example.com"],
    ["a@b.co", "a@b.co"],
    ["first.last@sub.example.co.uk", "first.last@sub.example.co.uk"],
    ["user@www.example.com", "user@www.example.com"],
    ["user@bücher.de", "user@xn--bcher-kva.de"],
    ["user@BÜCHER.DE", "user@xn--bcher-kva.de"],
    ["user@xn--bcher-kva.de", "user@xn--bcher-kva.de"],
    ["o'brien_x-y=z@example.org", "o'brien_x-y=z@example.org"],
    [`${"a".repeat(64)}@example.com`, `${"a".repeat(64)}@example.com`],
  ];
  it.each(valid)("normalizes %j to %s", (raw, expected) => {
    expect(normalize("email", "email", raw)).toEqual({ value: expected, canonical: expected });
  });

  const longDomain = `${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.com`; // 195 chars
  const invalid: Array<[string, string]> = [
    ["no @", "john.example.com"],
    ["two @", "a@b@example.com"],
    ["empty local part", "@example.com"],
    ["empty domain", "user@"],
    ["single-label domain", "user@localhost"],
    ["domain without a dot", "user@example"],
    ["leading dot in local part", ".user@example.com"],
    ["trailing dot in local part", "user.@example.com"],
    ["double dot in local part", "user..x@example.com"],
    ["space in local part", "us er@example.com"],
    ["quoted local part", '"john doe"@example.com'],
    ["non-ASCII local part", "jöhn@example.com"],
    ["local part over 64", `${"a".repeat(65)}@example.com`],
    ["underscore in domain", "user@exa_mple.com"],
    ["label starting with hyphen", "user@-example.com"],
    ["label ending with hyphen", "user@example-.com"],
    ["empty label", "user@example..com"],
    ["trailing dot in domain", "user@example.com."],
    ["IPv4 domain", "user@1.2.3.4"],
    ["IP literal domain", "user@[1.2.3.4]"],
    ["numeric TLD", "user@example.123"],
    ["domain with port", "user@example.com:25"],
    ["domain with path", "user@example.com/x"],
    ["invalid punycode", "user@xn--zz.de"],
    ["total over 254", `${"a".repeat(60)}@${longDomain}`],
  ];
  it.each(invalid)("rejects %s", (_name, raw) => {
    expectInvalid("email", "email", raw);
  });

  it("counts the total length on the normalized address", () => {
    expect(`${"a".repeat(58)}@${longDomain}`.length).toBe(254);
    expect(normalize("email", "email", `${"a".repeat(58)}@${longDomain}`).value).toHaveLength(254);
  });
});

describe("email evidence (complete)", () => {
  const v = pending({ type: "email", channel: "email", identifier: "john@example.com", code: "K7P2QX" });

  it("the mailed code proves otp; a wrong one is invalid_code", async () => {
    expect(await email.complete(v, { challengeCode: "K7P2QX" }, CTX)).toEqual({ ok: true, method: "otp" });
    expect(await email.complete(v, { challengeCode: "K7P2QY" }, CTX)).toEqual({
      ok: false,
      failure: ["invalid_code", "the code is not correct"],
    });
  });

  it("a code is required and is 6 letters or digits", async () => {
    expect(await rejection(() => email.complete(v, {}, CTX))).toBe("validation_error");
    expect(await rejection(() => email.complete(v, { challengeCode: "K7P2" }, CTX))).toBe("validation_error");
  });

  it("a source identifier must normalize to the asset", async () => {
    expect((await email.complete(v, { challengeCode: "K7P2QX", sourceIdentifier: " John@Example.COM " }, CTX)).ok).toBe(true);
    expect((await email.complete(v, { challengeCode: "K7P2QX", sourceIdentifier: "jane@example.com" }, CTX)).ok).toBe(false);
  });
});

describe("email challenge, options and form", () => {
  it("a code that is never shown and no link, sent to the address", () => {
    const c = challenge("email", "email", "john.doe@example.com", { config: configured });
    expect(c.code).toMatch(/^[A-Z0-9]{6}$/);
    expect(c).toMatchObject({ showCode: false, sendTo: "john.doe@example.com", sendOver: "email", purpose: "your email address" });
    expect(c.deepLink).toBeUndefined();
    expect(c.instruction).not.toContain(c.code!);
  });

  it("takes no create option; a phone's delivery is refused with its words", () => {
    expect(takenOptions("email", "email")).toEqual([]);
    expect(options("email", "email", { delivery: "outbound" })).toEqual({
      refused: "validation_error",
      message: "delivery is only for phone verifications",
      details: [{ field: "delivery", message: "phone only", code: "invalid" }],
    });
  });

  it("the service sends the code (and says where, masked); SMTP must be configured", () => {
    expect(email.sends?.code(null)).toBe(true);
    expect(email.sends?.notice("john.doe@example.com")).toEqual({ to: "j***e@example.com", what: "email" });
    expect(email.missingProvider(bare)).toEqual(["SMTP_URL"]);
    expect(email.missingProvider(configured)).toEqual([]);
  });

  it("the page asks for the mailed code", () => {
    expect(email.method).toBe("code");
    expect(email.form).toEqual({
      name: "Email",
      deliveries: [],
      step: "enter_code",
      fields: [{ name: "challenge_code", label: "Code from the email", input: "text" }],
    });
  });
});
