/**
 * Identifier normalization and masking for verifications (DECISIONS.md, "Verifications").
 *
 * `normalizeIdentifier` turns what a caller sent into the form we store (`value`) and the form we
 * hash and compare (`canonical`). The two are equal for every type except ethereum wallets, whose
 * `value` is the EIP-55 checksummed address and whose `canonical` is the lower-case address, and
 * telegram bots, whose `value` keeps the case given while `canonical` is lower case.
 *
 * Invalid input throws `AppError("invalid_identifier")`. Messages say what is wrong without
 * echoing the input back.
 */
import { createHash } from "node:crypto";
import { domainToASCII, domainToUnicode } from "node:url";
import { base58, bech32, bech32m } from "@scure/base";
import { parsePhoneNumberFromString } from "libphonenumber-js";
import { getAddress, isAddress } from "viem";
import { AppError } from "@icv/platform/errors.ts";

export type AssetType = "phone" | "email" | "domain" | "social" | "wallet" | "account" | "telegram_bot";

export interface NormalizedIdentifier {
  /** What we store and display. */
  value: string;
  /** What we hash and compare. */
  canonical: string;
}

const MAX_RAW_LENGTH = 320;
// C0 controls, DEL and C1 controls. Tabs and newlines count: an identifier is one line.
const CONTROL_CHARS = /[\u0000-\u001f\u007f-\u009f]/;

function invalid(message: string): never {
  throw new AppError("invalid_identifier", message);
}

const same = (v: string): NormalizedIdentifier => ({ value: v, canonical: v });

export function normalizeIdentifier(type: AssetType, channel: string, raw: string): NormalizedIdentifier {
  if (typeof raw !== "string") invalid("identifier must be a string");
  if (raw.length === 0) invalid("identifier must not be empty");
  if (raw.length > MAX_RAW_LENGTH) invalid(`identifier must be at most ${MAX_RAW_LENGTH} characters`);
  if (CONTROL_CHARS.test(raw)) invalid("identifier must not contain control characters");
  const input = raw.trim();
  if (input.length === 0) invalid("identifier must not be empty");

  switch (type) {
    case "phone":
      return same(normalizePhone(input));
    case "email":
      return same(normalizeEmail(input));
    case "domain":
      return same(normalizeDomain(input));
    case "social":
      return same(normalizeSocial(input));
    case "wallet":
      return normalizeWallet(channel, input);
    case "account":
      return same(normalizeAccount(input));
    case "telegram_bot":
      return normalizeTelegramBot(input);
    default:
      // Unreachable for typed callers; the request layer validates `type` before we get here.
      throw new AppError("validation_error", "unsupported identifier type");
  }
}

// ---------------------------------------------------------------------------------------------
// phone

// What a human writes around the digits of an international number. No letters (vanity numbers),
// no extensions, no `tel:` URIs: libphonenumber would otherwise quietly drop such text.
const PHONE_SHAPE = /^\+[0-9][0-9\s().\-/]*$/;

function normalizePhone(input: string): string {
  const s = input.startsWith("00") ? `+${input.slice(2)}` : input;
  if (!s.startsWith("+")) invalid("phone number must be in international format, starting with + or 00 and the country code");
  if (!PHONE_SHAPE.test(s)) invalid("phone number may contain only digits, spaces and the separators ( ) - . /");
  const parsed = parsePhoneNumberFromString(s);
  if (!parsed || parsed.ext || !parsed.isValid()) invalid("phone number is not a valid international number");
  return parsed.number;
}

// ---------------------------------------------------------------------------------------------
// domain (also used for the domain part of an email address)

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const MAX_DOMAIN_LENGTH = 253;

/**
 * A bare host name (no scheme, path or port) → lower-case ASCII (IDN → punycode), validated:
 * at least two labels of 1–63 chars of [a-z0-9-] not starting or ending with `-`, a TLD that is
 * not all digits (which also rejects IPv4 addresses), total ≤ 253.
 * `allowTrailingDot` strips one trailing dot (the root label) before validation.
 */
function asciiHostname(host: string, what: string, allowTrailingDot: boolean): string {
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

const SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;

function normalizeDomain(input: string): string {
  let rest = input;
  let wasUrl = false;
  const scheme = SCHEME.exec(rest);
  if (scheme) {
    rest = rest.slice(scheme[0].length);
    wasUrl = true;
  } else if (rest.startsWith("//")) {
    rest = rest.slice(2);
    wasUrl = true;
  }
  // Path, query and fragment.
  const end = rest.search(/[/?#]/);
  let host = end === -1 ? rest : rest.slice(0, end);
  // Userinfo only exists in URL form; a bare `name@host` is an email address, not a domain.
  if (wasUrl) {
    const at = host.lastIndexOf("@");
    if (at !== -1) host = host.slice(at + 1);
  }
  if (host.startsWith("[")) invalid("domain must be a domain name, not an IP address");
  const port = /:[0-9]{1,5}$/.exec(host);
  if (port) host = host.slice(0, port.index);
  if (host.length === 0) invalid("domain is missing a host name");

  const ascii = asciiHostname(host, "domain", true);
  // One leading `www.` goes, as long as a registrable-looking name (two labels) remains:
  // `www.com` is itself a domain and stays as it is.
  if (ascii.startsWith("www.") && ascii.slice(4).includes(".")) return ascii.slice(4);
  return ascii;
}

// ---------------------------------------------------------------------------------------------
// email

// Dot-atom local part (RFC 5322 atext), ASCII only; quoted local parts are not accepted.
const LOCAL_PART = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const MAX_LOCAL_LENGTH = 64;
const MAX_EMAIL_LENGTH = 254;

function normalizeEmail(input: string): string {
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

// ---------------------------------------------------------------------------------------------
// social

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

// ---------------------------------------------------------------------------------------------
// account (coinbase, kraken)

// Visible ASCII, no whitespace.
const ACCOUNT_ID = /^[\x21-\x7e]{1,255}$/;

function normalizeAccount(input: string): string {
  if (input.includes("@")) return normalizeEmail(input);
  // Account ids keep their case: exchanges may treat them as case-sensitive.
  if (!ACCOUNT_ID.test(input)) invalid("account id must be 1-255 printable characters without spaces");
  return input;
}

// ---------------------------------------------------------------------------------------------
// telegram_bot

const BOT_URL = /^(?:https?:\/\/)?(?:t|telegram)\.me\/([^/?#]*)\/?(?:[?#].*)?$/i;
const BOT_NAME = /^[A-Za-z0-9_]{5,32}$/;

function normalizeTelegramBot(input: string): NormalizedIdentifier {
  const url = BOT_URL.exec(input);
  const name = url ? url[1] : input.startsWith("@") ? input.slice(1) : input;
  if (!BOT_NAME.test(name)) invalid("telegram bot username must be 5-32 characters of letters, digits or '_'");
  if (!name.toLowerCase().endsWith("bot")) invalid("telegram bot username must end in 'bot'");
  return { value: `@${name}`, canonical: `@${name.toLowerCase()}` };
}

// ---------------------------------------------------------------------------------------------
// wallet

function normalizeWallet(channel: string, input: string): NormalizedIdentifier {
  switch (channel) {
    case "ethereum":
      return normalizeEthereum(input);
    case "solana":
      return same(normalizeSolana(input));
    case "bitcoin":
      return same(normalizeBitcoin(input));
    default:
      throw new AppError("invalid_channel_for_type", "wallet channel must be ethereum, solana or bitcoin");
  }
}

function normalizeEthereum(input: string): NormalizedIdentifier {
  if (!/^0x[0-9a-fA-F]{40}$/.test(input)) invalid("ethereum address must be 0x followed by 40 hex characters");
  // EIP-55: all-lower and all-upper hex carry no checksum and are accepted as they are; mixed case
  // must be the correct checksum (viem's strict `isAddress`, which itself would reject all-upper).
  const hex = input.slice(2);
  const uncased = hex === hex.toLowerCase() || hex === hex.toUpperCase();
  if (!uncased && !isAddress(input, { strict: true })) invalid("ethereum address has an invalid EIP-55 checksum");
  const lower = input.toLowerCase();
  return { value: getAddress(lower), canonical: lower };
}

const BASE58_CHARS = /^[1-9A-HJ-NP-Za-km-z]+$/;

function decodeBase58(input: string): Uint8Array | undefined {
  if (!BASE58_CHARS.test(input)) return undefined;
  try {
    return base58.decode(input);
  } catch {
    return undefined;
  }
}

function normalizeSolana(input: string): string {
  if (input.length < 32 || input.length > 44 || !BASE58_CHARS.test(input)) {
    invalid("solana address must be 32-44 base58 characters");
  }
  const bytes = decodeBase58(input);
  if (!bytes || bytes.length !== 32) invalid("solana address must decode to a 32-byte public key");
  return input;
}

// Version bytes: P2PKH and P2SH on mainnet, then on testnet.
const BASE58CHECK_VERSIONS = new Set([0x00, 0x05, 0x6f, 0xc4]);
const SEGWIT_HRPS = new Set(["bc", "tb"]);

function doubleSha256(data: Uint8Array): Buffer {
  return createHash("sha256").update(createHash("sha256").update(data).digest()).digest();
}

function normalizeBitcoin(input: string): string {
  const lower = input.toLowerCase();
  // Anything with a segwit-looking prefix (regtest `bcrt1` included, to reject it clearly) is bech32.
  if (/^(?:bc|tb|bcrt)1/.test(lower)) return normalizeSegwit(input, lower);
  return normalizeBase58Check(input);
}

function normalizeBase58Check(input: string): string {
  const bytes = decodeBase58(input);
  if (!bytes || bytes.length !== 25) invalid("bitcoin address is not a valid base58check or bech32 address");
  if (!BASE58CHECK_VERSIONS.has(bytes[0])) invalid("bitcoin address has an unknown version byte");
  const checksum = doubleSha256(bytes.subarray(0, 21)).subarray(0, 4);
  if (!checksum.equals(bytes.subarray(21))) invalid("bitcoin address has an invalid checksum");
  return input;
}

function normalizeSegwit(input: string, lower: string): string {
  if (input !== lower && input !== input.toUpperCase()) invalid("bitcoin bech32 address must not mix upper and lower case");
  const asBech32 = bech32.decodeUnsafe(lower);
  const asBech32m = asBech32 ? undefined : bech32m.decodeUnsafe(lower);
  const decoded = asBech32 || asBech32m;
  if (!decoded) invalid("bitcoin bech32 address has an invalid checksum or characters");
  if (!SEGWIT_HRPS.has(decoded.prefix)) invalid("bitcoin bech32 address must start with bc1 or tb1");
  if (decoded.words.length === 0) invalid("bitcoin bech32 address has no witness program");
  const version = decoded.words[0];
  const program = bech32.fromWordsUnsafe(decoded.words.slice(1));
  if (!program) invalid("bitcoin bech32 address has an invalid witness program encoding");
  if (version > 16) invalid("bitcoin bech32 address has an invalid witness version");
  if (version === 0) {
    if (!asBech32) invalid("bitcoin segwit v0 address must use bech32, not bech32m");
    if (program.length !== 20 && program.length !== 32) invalid("bitcoin segwit v0 program must be 20 or 32 bytes");
  } else {
    if (!asBech32m) invalid("bitcoin segwit v1+ address must use bech32m, not bech32");
    if (program.length < 2 || program.length > 40) invalid("bitcoin segwit program must be 2-40 bytes");
  }
  return lower;
}

// ---------------------------------------------------------------------------------------------
// masking

const STARS = "***";

function maskGeneric(value: string): string {
  const chars = Array.from(value);
  if (chars.length === 0) return STARS;
  if (chars.length > 8) return `${chars.slice(0, 4).join("")}${STARS}${chars.slice(-4).join("")}`;
  return `${chars[0]}${STARS}`;
}

function maskPhone(value: string): string {
  const digits = value.slice(1);
  if (!value.startsWith("+") || !/^[0-9]+$/.test(digits)) return maskGeneric(value);
  if (digits.length > 8) return `+${digits.slice(0, 4)}${STARS}${digits.slice(-4)}`;
  // Short numbers (a few small countries): keeping 4 + 4 would show every digit.
  return `+${digits.slice(0, 2)}${STARS}${digits.slice(-2)}`;
}

function maskEmail(value: string): string {
  const at = value.lastIndexOf("@");
  if (at <= 0) return maskGeneric(value);
  const local = Array.from(value.slice(0, at));
  const domain = value.slice(at + 1);
  const masked = local.length === 1 ? `${local[0]}${STARS}` : `${local[0]}${STARS}${local[local.length - 1]}`;
  return `${masked}@${domain}`;
}

/** Masks a normalized `value` for user listings (DECISIONS.md, "Masking"). */
export function maskIdentifier(type: AssetType, value: string): string {
  switch (type) {
    case "phone":
      return maskPhone(value);
    case "email":
      return maskEmail(value);
    case "account":
      // An account given as an email address is masked like one.
      return value.includes("@") ? maskEmail(value) : maskGeneric(value);
    default:
      return maskGeneric(value);
  }
}
