/**
 * The Channel interface: what one channel (phone/whatsapp, domain/dns, account/kraken, …) decides.
 * registry.ts picks the channel by type and channel; channel files import this file and the
 * helpers beside them (shared/, their type's folder) only.
 */
import type { z } from "zod";
import { AppError, type AssetType, type ChallengeMethod, type Config, type ConfigShape, type EnvName } from "@icv/platform";

/** The asset types: the keys of the type/channel table (@icv/platform's CHANNELS_BY_TYPE). */
export type { AssetType };

/** How the user completes a verification: a code, a wallet signature, a bot token, a DNS/HTTP check, OAuth or an exchange API key. */
export type Method = ChallengeMethod;

/** How a phone code travels (DECISIONS.md, Verifications): from the phone to us, or from us to the phone. */
export type PhoneDelivery = "inbound" | "outbound";

/** The channels a code is sent over by the service itself (the code goes *to* the asset). */
export type CodeChannel = "email" | "sms" | "whatsapp";

export interface NormalizedIdentifier {
  /** What we store and display. */
  value: string;
  /** What we hash and compare. */
  canonical: string;
}

/** The create-body fields only some channels take (DECISIONS.md "Compatibility"), as given. */
export interface CreateBody {
  delivery?: string;
  email_prefix?: string;
  dns_provider?: { name: string; credentials: Record<string, string> };
  chain_id?: number;
}

/** The same fields checked by the channel's `options` schema (a channel refuses those it does not take). */
export interface CreateOptions {
  delivery?: PhoneDelivery;
  email_prefix?: string;
  dns_provider?: { name: string; credentials: Record<string, string> };
  chain_id?: number;
}

export interface ChallengeSpec {
  /** The plain code; stored only as an HMAC. */
  code?: string;
  /** Whether the create response may show the code (user-initiated channels only). */
  showCode: boolean;
  instruction: string;
  deepLink?: string;
  /** Wallets: the exact text to sign. Domains: the record / file value. */
  message?: string;
  /** Where the service must deliver the code itself (email channels, outbound phone). */
  sendTo?: string;
  /** With sendTo: the channel the code goes over and what it confirms (the email's words). */
  sendOver?: CodeChannel;
  purpose?: string;
  expiresAt: Date;
  /** Domains: what the check state keeps (the record's token; by email, the mailbox prefix). */
  domainState?: { token: string | null; emailPrefix: string | null };
}

export interface ChallengeInput {
  id: string;
  /** The normalized identifier's value. */
  identifier: string;
  env: EnvName;
  now: Date;
  config: Config;
  /** The create options, checked by the channel's `options` schema (delivery, email_prefix, chain_id, …). */
  options: CreateOptions;
}

/** What a user submits to complete a verification (SubmitVerification), as given. */
export interface SubmitBody {
  challengeCode?: string;
  sourceIdentifier?: string;
  signature?: string;
  botToken?: string;
  /** kraken: a read-only API key and its secret (used once, never stored). */
  apiKey?: string;
  apiSecret?: string;
}

/** The evidence a channel takes, parsed from the submit body by the channel's `evidence` schema. */
export type Evidence =
  | { kind: "code"; code: string; source?: string }
  | { kind: "signature"; signature: string }
  | { kind: "bot_token"; token: string }
  | { kind: "api_key"; key: string; secret: string }
  /** Channels not completed by a submit (OAuth sign-in, DNS/HTTP checks): nothing is read. */
  | { kind: "none" };

/** The pending verification the evidence is checked against. */
export interface PendingVerification {
  id: string;
  type: string;
  channel: string;
  identifier: string;
  identifier_canonical: string;
  code_hmac: string | null;
  challenge_message: string | null;
  delivery: string | null;
}

/** What checking evidence needs from the service. */
export interface EvidenceContext {
  hmacKey: string;
  config: Config;
}

/** The answer to evidence: proven (by which proof method) or the error of a wrong answer. */
export type Verdict =
  | { ok: true; method: "otp" | "signature" | "bot_token" | "api_key" }
  | { ok: false; failure: ["invalid_code" | "invalid_signature", string] };

/** One input of a hosted-page form: the submit-body field it fills, its label and its kind. */
export interface FormField {
  name: "challenge_code" | "signature" | "bot_token" | "api_key" | "api_secret";
  label: string;
  input: "text" | "textarea" | "password";
}

/**
 * The hosted page's form of a channel, as data (the page scripts name no channel): what the start
 * form offers, what the started step shows and which inputs it takes.
 */
export interface HostedForm {
  /** The channel's name on the page ("WhatsApp", "DNS record"). */
  name: string;
  /** The ways a code may travel that the start form offers, with their words (phone channels; the first is the default); none: no choice. */
  deliveries: readonly { way: PhoneDelivery; label: string }[];
  /**
   * What the started step is: a code the user sends from the asset (shown, no input: reverse OTP),
   * a code we sent (typed in), a message to sign, a sign-in link, an API key, a domain check, a bot token.
   */
  step: "send_code" | "enter_code" | "sign" | "sign_in" | "api_key" | "domain_check" | "bot_token";
  /** The inputs of the submit form (for a phone channel: of its outbound code). */
  fields: readonly FormField[];
  /** A browser wallet the page may ask to sign (EIP-1193 personal_sign). */
  browserWallet?: "eip1193";
  /** Domain checks: what the user publishes (the TXT record, or the file over HTTP). */
  publishes?: "dns_record" | "http_file";
  /** false: the page cannot start this channel (it takes create options the page has no inputs for, as auto's DNS host credentials). */
  startable?: false;
}

export interface Channel {
  type: AssetType;
  channel: string;
  /** How a verification on this channel is completed. */
  method: Method;
  /** Challenge lifetime (DECISIONS.md). */
  ttlMs: number;
  /** The create-body fields this channel takes (delivery, email_prefix, dns_provider, chain_id), checked; it refuses the others. */
  options: z.ZodType<CreateOptions, CreateBody>;
  /** The submit body's evidence this channel takes. */
  evidence: z.ZodType<Evidence, SubmitBody>;
  /** The hosted page's form of this channel. */
  form: HostedForm;
  /**
   * The environment variables this channel reads, with their validation (registry.ts composes them
   * into CHANNEL_CONFIG, the section parseConfig is given where the service runs); a provider's
   * endpoint is declared with `providerUrl` (https only, unless ALLOW_PRIVATE_TARGETS). Its values
   * are read with `settingsOf(config, section)`.
   */
  config?: ConfigShape;
  /**
   * The environment variables a live verification on this channel needs and lacks ([] when it
   * can run). Test keys never need providers: nothing is sent in test mode.
   */
  missingProvider(config: Config): string[];
  /**
   * Identifier normalization (DECISIONS.md, "Verifications"): `value` is what we store and display,
   * `canonical` what we hash and compare. Invalid input throws `AppError("invalid_identifier")`
   * without echoing the input back.
   */
  normalize(raw: string): NormalizedIdentifier;
  /** The challenge of a new verification (or of a resent code). */
  challenge(input: ChallengeInput): ChallengeSpec;
  /**
   * Completes from the submit body (parsed by `evidence`); throws where this verification is not
   * completed by a submit (OAuth, DNS/HTTP checks, a reverse-OTP code).
   */
  complete(v: PendingVerification, body: SubmitBody, ctx: EvidenceContext): Promise<Verdict>;
  /** Masks a normalized value for user listings (DECISIONS.md, "Masking"). */
  mask(value: string): string;
  /**
   * Channels whose code the service itself sends (so it can send a new one: resend, a restarted
   * hosted asset): whether it does for a verification's delivery, and what carries it (the
   * masked address and "email", "SMS", … for the words that say so). Absent: never.
   */
  sends?: { code(delivery: string | null | undefined): boolean; notice(sendTo: string): { to: string; what: string } };
  /** Test mode, reverse OTP: the message a user-sent code arrives as (GET /test/messages). */
  testMessage?(code: string, config: Config): { to: string; body: string };
  /** Phone channels: the compared form of a number a provider attested and normalize refuses, and a session's instruction. */
  phone?: { attestedCanonical(raw: string): string | undefined; sessionInstruction: string };
}

export const MIN = 60_000;

const MAX_RAW_LENGTH = 320;
// C0 controls, DEL and C1 controls. Tabs and newlines count: an identifier is one line.
const CONTROL_CHARS = /[\u0000-\u001f\u007f-\u009f]/;

export function invalid(message: string): never {
  throw new AppError("invalid_identifier", message);
}

export const same = (v: string): NormalizedIdentifier => ({ value: v, canonical: v });

/** The checks every identifier passes before its channel normalizes it; answers it trimmed. */
export function checkRaw(raw: string): string {
  if (typeof raw !== "string") invalid("identifier must be a string");
  if (raw.length === 0) invalid("identifier must not be empty");
  if (raw.length > MAX_RAW_LENGTH) invalid(`identifier must be at most ${MAX_RAW_LENGTH} characters`);
  if (CONTROL_CHARS.test(raw)) invalid("identifier must not contain control characters");
  const input = raw.trim();
  if (input.length === 0) invalid("identifier must not be empty");
  return input;
}

/** The error of evidence sent to a channel that is not completed by a submit (OAuth, DNS/HTTP checks). */
export function notBySubmit(v: PendingVerification, by: string): never {
  throw new AppError("invalid_state", `${v.type} verifications on ${v.channel} are completed by ${by}, not by a code`);
}

/** The names among `names` that `config` lacks. */
export function need(config: Config, ...names: string[]): string[] {
  return names.filter((n) => !(config as unknown as Record<string, unknown>)[n]);
}
