/** Phone numbers: the strict international form a verification takes, and the form a provider attests. */
import { parsePhoneNumberFromString } from "libphonenumber-js";
import { providerPhone } from "@icv/platform";
import { checkRaw, invalid, same, type NormalizedIdentifier } from "../channel.ts";

// What a human writes around the digits of an international number. No letters (vanity numbers),
// no extensions, no `tel:` URIs: libphonenumber would otherwise quietly drop such text.
const PHONE_SHAPE = /^\+[0-9][0-9\s().\-/]*$/;

export function normalizePhone(raw: string): NormalizedIdentifier {
  const input = checkRaw(raw);
  const s = input.startsWith("00") ? `+${input.slice(2)}` : input;
  if (!s.startsWith("+")) invalid("phone number must be in international format, starting with + or 00 and the country code");
  if (!PHONE_SHAPE.test(s)) invalid("phone number may contain only digits, spaces and the separators ( ) - . /");
  const parsed = parsePhoneNumberFromString(s);
  if (!parsed || parsed.ext || !parsed.isValid()) invalid("phone number is not a valid international number");
  return same(parsed.number);
}

/** The separators a human writes, then what a provider would accept (a possible number). */
export const attestedPhone = (raw: string): string | undefined => providerPhone(raw.replace(/[\s().\-/]/g, ""));
