/** A Coinbase account: an email address or account id, confirmed by signing in with Coinbase (OAuth 2.0). */
import { checkRaw, invalid, same, type NormalizedIdentifier } from "../channel.ts";
import { normalizeEmail } from "../shared/names.ts";
import { oauthChannel } from "../shared/oauth-channel.ts";
import { maskAccount } from "../shared/mask.ts";

// Visible ASCII, no whitespace.
const ACCOUNT_ID = /^[\x21-\x7e]{1,255}$/;

function normalizeAccount(raw: string): NormalizedIdentifier {
  const input = checkRaw(raw);
  if (input.includes("@")) return same(normalizeEmail(input));
  // Account ids keep their case: exchanges may treat them as case-sensitive.
  if (!ACCOUNT_ID.test(input)) invalid("account id must be 1-255 printable characters without spaces");
  return same(input);
}

export const coinbase = oauthChannel({ type: "account", channel: "coinbase", name: "Coinbase", normalize: normalizeAccount, mask: maskAccount });
