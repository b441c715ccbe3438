/** Social handles: what the social channels without an email sign-in take as the account. */
import { checkRaw, invalid, same, type NormalizedIdentifier } from "../channel.ts";
import { normalizeEmail } from "../shared/names.ts";

const HANDLE = /^[a-z0-9._-]{1,100}$/;

export function normalizeHandle(raw: string): NormalizedIdentifier {
  const input = checkRaw(raw);
  const handle = input.startsWith("@") ? input.slice(1) : input;
  if (handle.length === 0) invalid("social handle must not be empty");
  // Handles on the supported platforms (github, x, instagram, tiktok, youtube, ...) are
  // case-insensitive, so value and canonical are both lower case: `@JohnDoe` and `johndoe` are
  // the same asset (a YouTube channel id is compared the same way).
  const lower = handle.toLowerCase();
  if (!HANDLE.test(lower)) invalid("social handle must be 1-100 characters of letters, digits, '.', '_' or '-'");
  return same(lower);
}

/** The platforms whose handle is the account's email address (OIDC sign-ins: google, linkedin). */
export const normalizeSignInEmail = (raw: string): NormalizedIdentifier => same(normalizeEmail(checkRaw(raw)));
