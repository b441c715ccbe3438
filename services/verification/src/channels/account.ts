/** Exchange accounts (coinbase, kraken): OAuth sign-in with the exchange. */
import type { Config } from "@icv/platform";
import { MIN, invalid, need, notBySubmit, same, type Channel } from "./channel.ts";
import { maskEmail, maskGeneric } from "./mask.ts";
import { normalizeEmail } from "./names.ts";

export const account: Channel = {
  type: "account",
  channels: ["coinbase", "kraken"],
  ttlMs: 10 * MIN,
  method: () => "oauth",
  missingProvider: (channel: string, config: Config) => need(config, `OAUTH_${channel.toUpperCase()}_CLIENT_ID`),
  normalize: (_channel, input) => same(normalizeAccount(input)),
  challenge: ({ id, channel, identifier, now, config }) => ({
    showCode: false,
    expiresAt: new Date(now.getTime() + account.ttlMs),
    instruction: `Sign in with ${channel} as ${identifier} to confirm you control the account.`,
    deepLink: `${config.publicBaseUrl}/oauth/${channel}/start?verification_id=${encodeURIComponent(id)}`,
  }),
  complete: (v) => notBySubmit(v, "signing in"),
  // an account given as an email address is masked like one
  mask: (value) => (value.includes("@") ? maskEmail(value) : maskGeneric(value)),
};


// Visible ASCII, no whitespace.
const ACCOUNT_ID = /^[\x21-\x7e]{1,255}$/;

function normalizeAccount(input: string): string {
  if (input.includes("@")) return normalizeEmail(input);
  // Account ids keep their case: exchanges may treat them as case-sensitive.
  if (!ACCOUNT_ID.test(input)) invalid("account id must be 1-255 printable characters without spaces");
  return input;
}