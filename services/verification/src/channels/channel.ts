/**
 * The Channel interface: what one channel family (phone, email, wallet, …) decides. The registry
 * (index.ts) picks the family by type; channel files import this file and shared helpers only.
 */
import { AppError, type AssetType, type ChallengeMethod, type Config, type EnvName } from "@icv/platform";

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
  type: AssetType;
  channel: string;
  identifier: string;
  env: EnvName;
  now: Date;
  config: Config;
  /** Phone: "inbound" (default; the user sends the shown code) or "outbound" (we send a code to the number). */
  delivery?: PhoneDelivery;
  /** Domain by email: the mailbox at the domain the code goes to (checked by checkOptions; default admin). */
  emailPrefix?: string;
  /** Ethereum wallets: the chain the message names (chainIdOf, default 1). */
  chainId?: number;
}

/** Create options that only some channels take (DECISIONS.md "Compatibility"): checked by the channel's checkOptions. */
export interface CreateOptions {
  emailPrefix?: string;
  dnsProvider?: { name: string; credentials: Record<string, string> };
}

/** What a user submits to complete a verification (SubmitVerification). */
export interface Evidence {
  challengeCode?: string;
  sourceIdentifier?: string;
  signature?: string;
  botToken?: string;
  /** kraken: a read-only API key and its secret (used once, never stored). */
  apiKey?: string;
  apiSecret?: string;
}

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

export interface Channel {
  type: AssetType;
  /** The spec's type/channel compatibility table, this type's row. */
  channels: readonly string[];
  /** Challenge lifetime (DECISIONS.md). */
  ttlMs: number;
  /** How a verification on `channel` is completed. */
  method(channel: string): Method;
  /**
   * The environment variables a live verification on this channel needs and lacks ([] when it
   * can run). Test keys never need providers: nothing is sent in test mode.
   */
  missingProvider(channel: string, config: Config): string[];
  /** The stored and the compared form of an identifier (already checked by checkRaw, trimmed). */
  normalize(channel: string, input: string): NormalizedIdentifier;
  /** The challenge of a new verification (or of a resent code). */
  challenge(input: ChallengeInput): ChallengeSpec;
  /** Completes from submitted evidence; throws where this channel is not completed by a submit. */
  complete(v: PendingVerification, evidence: Evidence, ctx: EvidenceContext): Promise<Verdict>;
  /** The create body's `delivery`, checked (channels whose code can travel either way); others refuse it. */
  delivery?(channel: string, requested: string | undefined): PhoneDelivery;
  /** Channels that need create options the hosted page cannot take (domain auto: the DNS host's API credentials). */
  startableOnPage?(channel: string): boolean;
  /** Checks the create options this channel takes (throws validation_error); channels without it refuse any. */
  checkOptions?(channel: string, options: CreateOptions): void;
  /** The create body's `chain_id`, checked (channels on a chain with ids, default 1); others refuse it. */
  chainId?(channel: string, requested: number | undefined): number | undefined;
  /** Test mode, reverse OTP: the message a user-sent code arrives as (GET /test/messages). */
  expectedMessage?(channel: string, code: string, config: Config): { to: string; body: string };
  /** Masks a normalized value for user listings (DECISIONS.md, "Masking"). */
  mask(value: string): string;
  /**
   * Whether the service itself sends the code of a verification on `channel` (so it can send a
   * new one: resend, a restarted hosted asset). Absent: never.
   */
  sendsCode?(channel: string, delivery: string | null | undefined): boolean;
  /** With sendsCode: the masked address a code went to (`sendTo`) and what carried it, for the words that say so. */
  sentNotice?(channel: string, sendTo: string): { to: string; what: string };
  /** Whether the hosted page shows the code (one the user sends from the asset, reverse OTP). Absent: never. */
  showsCode?(channel: string, delivery: string | null): boolean;
  /**
   * The compared form of an identifier that a provider attested and normalize refuses (a phone a
   * session captured), for proof checks; undefined when it is not one either.
   */
  attestedCanonical?(raw: string): string | undefined;
  /** A verification a phone-first session proved over `channel`: its instruction; undefined for channels sessions do not use. */
  sessionInstruction?(channel: string): string | undefined;
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
