/** What the domain RPCs accept: a normalized domain name and a challenge value (input limits). */
import { AppError } from "@icv/platform";

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/** A normalized domain (lower case, punycode, no trailing dot, at least two labels, not an IP address). */
export function requireDomain(domain: string): string {
  const d = domain.trim();
  const labels = d.split(".");
  const ok =
    d.length > 0 &&
    d.length <= 253 &&
    d === d.toLowerCase() &&
    labels.length >= 2 &&
    labels.every((l) => LABEL.test(l)) &&
    !/^\d+$/.test(labels[labels.length - 1]);
  if (!ok)
    throw new AppError("validation_error", "domain must be a normalized domain name (lower case, punycode, no trailing dot)", {
      details: [{ field: "domain", message: "not a domain name", code: "invalid" }],
    });
  return d;
}

/** The TXT value or file body looked for: printable, at most 255 characters (one TXT string). */
export function requireExpected(value: string): string {
  if (!value || value.length > 255 || /[^\x21-\x7e]/.test(value)) {
    throw new AppError("validation_error", "expected_value must be 1 to 255 printable characters without spaces", {
      details: [{ field: "expected_value", message: "invalid", code: "invalid" }],
    });
  }
  return value;
}
