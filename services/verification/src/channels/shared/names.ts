/** Host names and email addresses: shared by the domain, email and account channels. */
import { domainToASCII, domainToUnicode } from "node:url";
import { invalid } from "../channel.ts";

// domain (also used for the domain part of an email address)

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const MAX_DOMAIN_LENGTH = 253;

/**
 * A bare host name (no scheme, path or port) → lower-case ASCII (IDN → punycode), validated:
 * at least two labels of 1–63 chars of [a-z0-9-] not starting or ending with `-`, a TLD that is
 * not all digits (which also rejects IPv4 addresses), total ≤ 253.
 * `allowTrailingDot` strips one trailing dot (the root label) before validation.
 */
export function asciiHostname(host: string, what: string, allowTrailingDot: boolean): string {
  // `%` would be percent-decoded and `@ : [ ] \` are URL syntax; none belongs in a host name.
  if (/[\s%@:[\]\\/?#]/.test(host)) invalid(`${what} contains characters not allowed in a domain name`);
  let ascii = domainToASCII(host);
  if (!ascii) invalid(`${what} is not a valid domain name`);
  if (allowTrailingDot && ascii.endsWith(".")) ascii = ascii.slice(0, -1);
  if (ascii.length > MAX_DOMAIN_LENGTH) invalid(`${what} must be at most ${MAX_DOMAIN_LENGTH} characters`);
  const labels = ascii.split(".");
  if (labels.length < 2) invalid(`${what} must have at least two labels (like example.com)`);
  for (const label of labels) {
    if (!LABEL.test(label)) {
      invalid(`${what} has an invalid label: each label must be 1-63 letters, digits or hyphens, not starting or ending with a hyphen`);
    }
    // an `xn--` label must decode (Node 24 passes undecodable ones like `xn--zz` through unchanged; Node 20 rejected them)
    if (label.startsWith("xn--") && domainToUnicode(label).startsWith("xn--")) invalid(`${what} is not a valid domain name`);
  }
  if (/^[0-9]+$/.test(labels[labels.length - 1])) invalid(`${what} must be a domain name, not an IP address`);
  return ascii;
}

// Dot-atom local part (RFC 5322 atext), ASCII only; quoted local parts are not accepted.
const LOCAL_PART = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const MAX_LOCAL_LENGTH = 64;
const MAX_EMAIL_LENGTH = 254;

export function normalizeEmail(input: string): string {
  const s = input.trim();
  const at = s.indexOf("@");
  if (at === -1 || at !== s.lastIndexOf("@")) invalid("email address must contain exactly one @");
  const local = s.slice(0, at).toLowerCase();
  const domainPart = s.slice(at + 1);
  if (local.length === 0) invalid("email address is missing the part before the @");
  if (local.length > MAX_LOCAL_LENGTH) invalid(`email address part before the @ must be at most ${MAX_LOCAL_LENGTH} characters`);
  if (!LOCAL_PART.test(local)) invalid("email address has invalid characters or dots before the @");
  if (domainPart.length === 0) invalid("email address is missing the domain after the @");
  const domain = asciiHostname(domainPart, "email domain", false);
  const email = `${local}@${domain}`;
  if (email.length > MAX_EMAIL_LENGTH) invalid(`email address must be at most ${MAX_EMAIL_LENGTH} characters`);
  return email;
}
