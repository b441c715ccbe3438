/** The cases every OAuth channel (social accounts, coinbase) answers alike. */
import { expect, it } from "vitest";
import type { Channel } from "../../src/channels/channel.ts";
import { bare, challenge, configured, CTX, pending, rejection, takenOptions } from "./helpers.ts";

export function oauthCases(channel: Channel, identifier: string) {
  const { type } = channel;
  it("a single-use OAuth start link on the public base, its secret kept only as the code HMAC", () => {
    const c = challenge(type, channel.channel, identifier, { config: configured });
    const start = `https://verify.example.com/oauth/${channel.channel}/start?t=ver_01JABCDEFGHJKMNPQRSTVWXYZ0.`;
    expect(c.deepLink!.startsWith(start)).toBe(true);
    expect(c.deepLink!.slice(start.length)).toMatch(/^[0-9a-f]{64}$/);
    expect(c.deepLink!.endsWith(`.${c.code}`)).toBe(true);
    expect(c.showCode).toBe(false);
    expect(c.instruction).toBe(`Sign in with ${channel.channel} as ${identifier} to confirm you control the account.`);
    expect(challenge(type, channel.channel, identifier).code).not.toBe(c.code);
    expect(c.expiresAt.getTime() - Date.parse("2026-02-04T10:00:00.000Z")).toBe(10 * 60_000);
  });

  it("completed by signing in, never by a submit", async () => {
    expect(channel.method).toBe("oauth");
    const v = pending({ type, channel: channel.channel, identifier });
    expect(await rejection(() => channel.complete(v, { challengeCode: "K7P2QX" }, CTX))).toBe("invalid_state");
  });

  it("takes no create option; needs the platform's OAuth client", () => {
    expect(takenOptions(type, channel.channel)).toEqual([]);
    const upper = channel.channel.toUpperCase();
    expect(channel.missingProvider(bare)).toEqual([`OAUTH_${upper}_CLIENT_ID`, `OAUTH_${upper}_CLIENT_SECRET`]);
  });

  it("the page shows a sign-in link", () => {
    expect(channel.form).toMatchObject({ step: "sign_in", deliveries: [], fields: [] });
    expect(channel.form.name.length).toBeGreaterThan(0);
  });
}
