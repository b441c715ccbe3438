/** The cases every phone channel answers alike: reverse OTP is never completed by a submit; a test message; the session's words. */
import { expect, it } from "vitest";
import type { Channel } from "../../../src/channels/channel.ts";
import { configured, CTX, options, pending, rejection } from "../helpers.ts";

export function reverseOtpCases(channel: Channel, testBody: (code: string) => string, sessionWords: string) {
  it("reverse OTP: a typed code is refused (invalid_state), with or without the number as its source", async () => {
    const v = pending({ type: "phone", channel: channel.channel, identifier: "+37069199199", code: "ABC123", delivery: "inbound" });
    expect(await rejection(() => channel.complete(v, { challengeCode: "ABC123" }, CTX))).toBe("invalid_state");
    expect(await rejection(() => channel.complete(v, { challengeCode: "ABC123", sourceIdentifier: "+37069199199" }, CTX))).toBe("invalid_state");
    expect(await rejection(() => channel.complete(v, {}, CTX))).toBe("invalid_state");
  });

  it("delivery: inbound by default; anything but inbound or outbound is refused", () => {
    expect(options("phone", channel.channel, {})).toMatchObject({ delivery: "inbound" });
    expect(options("phone", channel.channel, { delivery: "inbound" })).toMatchObject({ delivery: "inbound" });
    expect(options("phone", channel.channel, { delivery: "sideways" })).toEqual({
      refused: "validation_error",
      message: "delivery must be inbound or outbound",
      details: [{ field: "delivery", message: "inbound or outbound", code: "invalid_enum_value" }],
    });
  });

  it("refuses the other types' options with their words", () => {
    expect(options("phone", channel.channel, { email_prefix: "admin" })).toMatchObject({
      refused: "validation_error",
      details: [{ field: "email_prefix", message: "domain only" }],
    });
    expect(options("phone", channel.channel, { chain_id: 1 })).toMatchObject({
      refused: "validation_error",
      details: [{ field: "chain_id", message: "ethereum wallets only" }],
    });
  });

  it("test mode: the code arrives as the message the link pre-fills, to our address", () => {
    const m = channel.testMessage!("ABC123", configured);
    expect(m.body).toBe(testBody("ABC123"));
    expect(m.to.length).toBeGreaterThan(1);
  });

  it("a session proved over it says so; a number a provider attests is compared as such", () => {
    expect(channel.phone?.sessionInstruction).toBe(sessionWords);
    expect(channel.phone?.attestedCanonical("+1 (555) 010-0000")).toBe("+15550100000");
  });

  it("shows the code to send on the page (no code box for it) and masks numbers", () => {
    expect(channel.form.step).toBe("send_code");
    expect(channel.method).toBe("code");
    expect(channel.mask("+37069199199")).toBe("+3706***9199");
  });
}

/** The outbound code of sms and whatsapp: sent to the number, never shown, typed back. */
export function outboundCases(channel: Channel, by: RegExp, what: string) {
  it("outbound: a code sent to the number, never shown, no deep link", () => {
    const c = channel.challenge({
      id: "ver_01JABCDEFGHJKMNPQRSTVWXYZ0",
      identifier: "+37069199199",
      env: "live",
      now: new Date(),
      config: configured,
      options: { delivery: "outbound" },
    });
    expect(c.code).toMatch(/^[A-Z0-9]{6}$/);
    expect(c).toMatchObject({ showCode: false, sendTo: "+37069199199", sendOver: channel.channel });
    expect(c.deepLink).toBeUndefined();
    expect(c.instruction).toMatch(by);
    expect(c.instruction).not.toContain(c.code!);
  });

  it("outbound: the code sent proves otp; a wrong code or another number does not", async () => {
    const v = pending({ type: "phone", channel: channel.channel, identifier: "+37069199199", code: "ABC123", delivery: "outbound" });
    expect(await channel.complete(v, { challengeCode: "abc123" }, CTX)).toEqual({ ok: true, method: "otp" });
    expect(await channel.complete(v, { challengeCode: "ABC124" }, CTX)).toEqual({ ok: false, failure: ["invalid_code", "the code is not correct"] });
    expect((await channel.complete(v, { challengeCode: "ABC123", sourceIdentifier: "+37069199198" }, CTX)).ok).toBe(false);
    expect((await channel.complete(v, { challengeCode: "ABC123", sourceIdentifier: "00370 691 99199" }, CTX)).ok).toBe(true);
    expect(await rejection(() => channel.complete(v, {}, CTX))).toBe("validation_error");
  });

  it("outbound is taken; the service sends that code, and says where it went", () => {
    expect(options("phone", channel.channel, { delivery: "outbound" })).toMatchObject({ delivery: "outbound" });
    expect(channel.sends?.code("outbound")).toBe(true);
    expect(channel.sends?.code("inbound")).toBe(false);
    expect(channel.sends?.notice("+37069199199")).toEqual({ to: "+3706***9199", what });
    expect(channel.form.deliveries).toEqual([
      { way: "inbound", label: "Send a code from my phone" },
      { way: "outbound", label: "Get a code by SMS or WhatsApp" },
    ]);
  });
}
