/** The cases the checked domain channels (dns, http, auto) answer alike. */
import { expect, it } from "vitest";
import type { Channel } from "../../../src/channels/channel.ts";
import { bare, challenge, CTX, NOW, options, pending, rejection } from "../helpers.ts";

export function checkedCases(channel: Channel) {
  it("publishes icv-verify={32 random bytes, base64url}, a fresh one each time, for a day; no code", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 3; i++) {
      const ch = challenge("domain", channel.channel, "example.com");
      expect(ch.message).toMatch(/^icv-verify=[A-Za-z0-9_-]{43}$/);
      expect(ch.domainState!.token).toBe(ch.message!.slice("icv-verify=".length));
      expect(ch.domainState!.emailPrefix).toBeNull();
      expect(Buffer.from(ch.domainState!.token!, "base64url")).toHaveLength(32);
      expect(ch.code).toBeUndefined();
      expect(ch.showCode).toBe(false);
      expect(ch.expiresAt.getTime() - NOW.getTime()).toBe(24 * 3600_000);
      seen.add(ch.message!);
    }
    expect(seen.size).toBe(3);
  });

  it("is completed by the check, not by a submit", async () => {
    const v = pending({ type: "domain", channel: channel.channel, identifier: "example.com" });
    expect(await rejection(() => channel.complete(v, { challengeCode: "K7P2QX" }, CTX))).toBe("invalid_state");
    expect(channel.method).toBe("domain_check");
    expect(channel.form.step).toBe("domain_check");
  });

  it("email_prefix is only for channel email; nothing to configure; nothing sent", () => {
    expect(options("domain", channel.channel, { email_prefix: "admin" })).toMatchObject({
      refused: "validation_error",
      message: "email_prefix is only for domain verifications on channel email",
    });
    expect(channel.missingProvider(bare)).toEqual([]);
    expect(channel.sends).toBeUndefined();
    expect(channel.mask("example.com")).toBe("exam***.com");
  });
}
