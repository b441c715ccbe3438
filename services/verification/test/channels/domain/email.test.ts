/** domain/email: a code mailed to an admin mailbox at the domain ({email_prefix}@{domain}, default admin). */
import { describe, it, expect } from "vitest";
import { email } from "../../../src/channels/domain/email.ts";
import { bare, challenge, configured, CTX, options, pending, rejection, takenOptions } from "../helpers.ts";

describe("domain/email", () => {
  it("a hidden code sent to admin@{domain} by default", () => {
    const c = challenge("domain", "email", "example.com", { config: configured });
    expect(c.showCode).toBe(false);
    expect(c.code).toMatch(/^[A-Z0-9]{6}$/);
    expect(c.instruction).toContain("example.com");
    expect(c).toMatchObject({ sendTo: "admin@example.com", sendOver: "email", domainState: { token: null, emailPrefix: "admin" } });
    expect(c.instruction).not.toContain(c.code!);
  });

  it("by email the code goes to the chosen mailbox, never shown", () => {
    const ch = challenge("domain", "email", "example.com", { options: { email_prefix: "postmaster" } });
    expect(ch).toMatchObject({
      sendTo: "postmaster@example.com",
      sendOver: "email",
      showCode: false,
      domainState: { token: null, emailPrefix: "postmaster" },
    });
  });

  it("email_prefix: one of the five mailboxes, on channel email only", () => {
    for (const p of ["admin", "administrator", "webmaster", "hostmaster", "postmaster"])
      expect(options("domain", "email", { email_prefix: p })).toEqual(expect.objectContaining({ email_prefix: p }));
    expect(options("domain", "email", { email_prefix: "root" })).toMatchObject({
      refused: "validation_error",
      message: "email_prefix must be one of admin, administrator, webmaster, hostmaster, postmaster",
    });
    expect(options("domain", "email", { email_prefix: "Admin" })).toMatchObject({ refused: "validation_error" });
    expect(options("domain", "dns", { email_prefix: "admin" })).toMatchObject({ refused: "validation_error" });
    expect(takenOptions("domain", "email")).toEqual(["email_prefix"]);
  });

  it("the code mailed to the admin address proves otp; a wrong or missing one does not", async () => {
    const v = pending({ type: "domain", channel: "email", identifier: "example.com", code: "K7P2QX" });
    expect(await email.complete(v, { challengeCode: "K7P2QX" }, CTX)).toEqual({ ok: true, method: "otp" });
    expect(await email.complete(v, { challengeCode: "K7P2QY" }, CTX)).toEqual({ ok: false, failure: ["invalid_code", "the code is not correct"] });
    expect(await rejection(() => email.complete(v, {}, CTX))).toBe("validation_error");
  });

  it("the service sends the code (SMTP needed) and the page asks for it", () => {
    expect(email.method).toBe("code");
    expect(email.sends?.code(null)).toBe(true);
    expect(email.sends?.notice("admin@example.com")).toEqual({ to: "a***n@example.com", what: "email" });
    expect(email.missingProvider(bare)).toEqual(["SMTP_URL"]);
    expect(email.form).toMatchObject({ step: "enter_code", fields: [{ name: "challenge_code" }] });
  });
});
