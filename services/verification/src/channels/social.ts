/** Social accounts: OAuth 2.0 sign-in with the platform (src/oauth/ runs it; docs/oauth.md). */
import { CHANNELS_BY_TYPE } from "@icv/platform";
import type { Config } from "@icv/platform";
import { MIN, invalid, need, notBySubmit, same, type Channel } from "./channel.ts";
import { maskEmail, maskGeneric } from "./shared/mask.ts";
import { normalizeEmail } from "./shared/names.ts";
import { newLinkSecret, startLink } from "./shared/sign-in-link.ts";

/** The platforms whose handle is the account's email address (OIDC sign-ins). */
const BY_EMAIL = new Set(["google", "linkedin"]);

export const social: Channel = {
  type: "social",
  channels: CHANNELS_BY_TYPE.social,
  ttlMs: 10 * MIN,
  method: () => "oauth",
  missingProvider: (channel: string, config: Config) =>
    need(config, `OAUTH_${channel.toUpperCase()}_CLIENT_ID`, `OAUTH_${channel.toUpperCase()}_CLIENT_SECRET`),
  normalize: (channel, input) => same(BY_EMAIL.has(channel) ? normalizeEmail(input) : normalizeSocial(input)),
  challenge: ({ id, channel, identifier, now, config }) => {
    const secret = newLinkSecret();
    return {
      // the link's secret: stored only as the code HMAC, never shown apart from the link
      code: secret,
      showCode: false,
      expiresAt: new Date(now.getTime() + social.ttlMs),
      instruction: `Sign in with ${channel} as ${identifier} to confirm you control the account.`,
      deepLink: startLink(config.publicBaseUrl, channel, id, secret),
    };
  },
  complete: (v) => notBySubmit(v, "signing in"),
  mask: (value) => (value.includes("@") ? maskEmail(value) : maskGeneric(value)),
};

const HANDLE = /^[a-z0-9._-]{1,100}$/;

function normalizeSocial(input: string): string {
  const handle = input.startsWith("@") ? input.slice(1) : input;
  if (handle.length === 0) invalid("social handle must not be empty");
  // Handles on the supported platforms (github, x, instagram, tiktok, youtube, ...) are
  // case-insensitive, so value and canonical are both lower case: `@JohnDoe` and `johndoe` are
  // the same asset (a YouTube channel id is compared the same way).
  const lower = handle.toLowerCase();
  if (!HANDLE.test(lower)) invalid("social handle must be 1-100 characters of letters, digits, '.', '_' or '-'");
  return lower;
}
