/** Masking of identifiers for user listings (DECISIONS.md, "Masking"): shared by the channels. */
const STARS = "***";

export function maskGeneric(value: string): string {
  const chars = Array.from(value);
  if (chars.length === 0) return STARS;
  if (chars.length > 8) return `${chars.slice(0, 4).join("")}${STARS}${chars.slice(-4).join("")}`;
  return `${chars[0]}${STARS}`;
}

export function maskPhone(value: string): string {
  const digits = value.slice(1);
  if (!value.startsWith("+") || !/^[0-9]+$/.test(digits)) return maskGeneric(value);
  if (digits.length > 8) return `+${digits.slice(0, 4)}${STARS}${digits.slice(-4)}`;
  // Short numbers (a few small countries): keeping 4 + 4 would show every digit.
  return `+${digits.slice(0, 2)}${STARS}${digits.slice(-2)}`;
}

export function maskEmail(value: string): string {
  const at = value.lastIndexOf("@");
  if (at <= 0) return maskGeneric(value);
  const local = Array.from(value.slice(0, at));
  const domain = value.slice(at + 1);
  const masked = local.length === 1 ? `${local[0]}${STARS}` : `${local[0]}${STARS}${local[local.length - 1]}`;
  return `${masked}@${domain}`;
}

/** An account (a social handle, an exchange account): masked as an email address when it is one. */
export const maskAccount = (value: string): string => (value.includes("@") ? maskEmail(value) : maskGeneric(value));
