/** Social accounts: OAuth sign-in with the platform. */
import type { Config } from "@icv/platform";
import { MIN, invalid, need, notBySubmit, same, type Channel } from "./channel.ts";
import { maskGeneric } from "./mask.ts";

export const social: Channel = {
  type: "social",
  channels: ["github", "google", "facebook", "x", "linkedin", "instagram", "youtube", "tiktok"],
  ttlMs: 10 * MIN,
  method: () => "oauth",
  missingProvider: (channel: string, config: Config) => need(config, `OAUTH_${channel.toUpperCase()}_CLIENT_ID`),
  normalize: (_channel, input) => same(normalizeSocial(input)),
  challenge: ({ id, channel, identifier, now, config }) => ({
    showCode: false,
    expiresAt: new Date(now.getTime() + social.ttlMs),
    instruction: `Sign in with ${channel} as ${identifier} to confirm you control the account.`,
    deepLink: `${config.publicBaseUrl}/oauth/${channel}/start?verification_id=${encodeURIComponent(id)}`,
  }),
  complete: (v) => notBySubmit(v, "signing in"),
  mask: maskGeneric,
};


const HANDLE = /^[a-z0-9._-]{1,100}$/;

function normalizeSocial(input: string): string {
  const handle = input.startsWith("@") ? input.slice(1) : input;
  if (handle.length === 0) invalid("social handle must not be empty");
  // Handles on the supported platforms (github, x, instagram, tiktok, ...) are case-insensitive,
  // so value and canonical are both lower case: `@JohnDoe` and `johndoe` are the same asset.
  const lower = handle.toLowerCase();
  if (!HANDLE.test(lower)) invalid("social handle must be 1-100 characters of letters, digits, '.', '_' or '-'");
  return lower;
}