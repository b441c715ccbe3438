import { createHash, timingSafeEqual } from "node:crypto";
import type { ConfigShape, SettingsOf } from "../config-section.ts";

/**
 * The contract of a messaging provider (one file each beside this one: telegram, whatsapp, sms,
 * viber). A provider declares its configuration keys, what a live channel on it needs, where
 * users write and the deep link that opens it, how its webhook is signed, how an inbound
 * delivery reads as common messages, and the client that sends replies. The session service's
 * inbound handling and the gateway's hooks work from this contract and the table
 * (registry.ts) alone; neither names a provider.
 */

/** A provider's configuration keys are a section of the configuration (composed into it by config.ts). */
export type { ConfigShape, SettingsOf };

/**
 * One message a user sent, as every provider reads into it. `sender` is what the provider
 * attests: a phone number (WhatsApp's wa_id, Twilio's From) or a chat user (Telegram, Viber),
 * who then has to share a contact for the number.
 */
export interface InboundMessage {
  /** The provider's id of the message, unique per message: a redelivery changes nothing. */
  id: string;
  /** Where replies go (a chat id, a user id or a number). */
  replyTo: string;
  sender: { phone: string } | { user: string };
  /** Not for us (a bot, a group chat): claimed once, answered with nothing. */
  ignored?: true;
  text?: string;
  /** A shared contact: its number, and whether the provider shows it is the sender's own. */
  contact?: { phone: string; own: boolean };
  /** The payload of the deep link that opened the conversation (Viber's `context`). */
  context?: string;
  /** It opens a conversation (Viber's conversation_started): the reply is the delivery's answer where the messenger says so. */
  opening?: true;
}

/** The keyboard under a reply: one "share my phone number" button, or none any more. */
export type Keyboard = { requestContact: string } | { remove: true };

/** Sends a provider's replies. */
export interface Messenger {
  send(to: string, text: string, keyboard?: Keyboard): Promise<void>;
  /**
   * The body that answers a delivery opening a conversation (Viber's welcome message: a bot may
   * not send_message to a user who has not subscribed yet); absent where replies are sent.
   */
  welcome?(text: string, keyboard?: Keyboard): string;
}

/** What a provider's start-up work logs with (a pino logger fits). */
export interface ProviderLog {
  info(obj: object | string, msg?: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** What a hook's signature check sees: the raw body, the headers and the public URL it was posted to ({PUBLIC_BASE_URL}/hooks/<name>). */
export interface HookRequest {
  body: Buffer;
  header(name: string): string | undefined;
  url: string;
}

/** A provider's public hook (`/hooks/<name>`) when it is configured. */
export interface Hook {
  /** True only for a delivery the provider signed. */
  verify(req: HookRequest): boolean;
  /** The answer a handled delivery gets. */
  answer: { type: string; body: string };
  /** A GET subscription handshake: the text to answer the query with, or undefined (403). */
  handshake?(query: Record<string, unknown>): string | undefined;
}

/**
 * How a user reaches us: `number` providers attest the sender's number with each message, so
 * the message that carries a code or token settles it; `chat` providers give a chat user only,
 * so the bot asks for the contact and the shared number settles what the chat was opened for.
 */
export type MessagingFlow = "number" | "chat";

export interface MessagingProvider<S extends ConfigShape = ConfigShape> {
  name: string;
  /** The display name ("WhatsApp"). */
  label: string;
  flow: MessagingFlow;
  config: S;
  /** The variables a live verification or session on this provider lacks ([] when it can run). */
  missing(c: SettingsOf<S>): string[];
  /** Where users write (`@bot`, our E.164 number, the Viber chat URI); the test placeholder when unset. */
  address(c: SettingsOf<S>): string;
  /** The test placeholder address (a deep link to it is never offered on a hosted page). */
  placeholder: string;
  /** The link that opens the app with `payload` (a code or session token) or `prefill` (the text to send) ready. */
  deepLink(address: string, payload: string, prefill: string): string;
  /** What the user sends (or the deep link makes the app send), for the test inbox. */
  expectedMessage(payload: string, prefill: string): string;
  hook(c: SettingsOf<S>): Hook | undefined;
  /** The messages of one delivery; undefined when the body is not this provider's delivery at all. */
  parse(body: Uint8Array): InboundMessage[] | undefined;
  /** The reply client, when configured. */
  messenger(c: SettingsOf<S>): Messenger | undefined;
  /**
   * Work at the session service's start (on one process): point the provider at our hook, or
   * poll it and hand each delivery to `deliver`. Undefined when there is nothing to do.
   */
  start?(c: SettingsOf<S>, o: { publicBaseUrl: string; deliver(body: Uint8Array): Promise<void>; log: ProviderLog }): { stop(): Promise<void> } | undefined;
}

/** Compares two strings in time independent of where they differ (both are hashed to equal length first). */
export function sameString(a: string, b: string): boolean {
  const ha = createHash("sha256").update(a, "utf8").digest();
  const hb = createHash("sha256").update(b, "utf8").digest();
  return timingSafeEqual(ha, hb) && a.length === b.length;
}

/** True when a secret token header (Telegram's X-Telegram-Bot-Api-Secret-Token, Meta's hub.verify_token) equals ours. */
export function secretTokenValid(expected: string, got: string | undefined): boolean {
  if (!expected || typeof got !== "string") return false;
  return sameString(expected, got);
}

/** A body as text, parsed as JSON; undefined when it is not JSON. */
export function jsonOf(body: Uint8Array | string): unknown {
  try {
    return JSON.parse(typeof body === "string" ? body : new TextDecoder().decode(body));
  } catch {
    return undefined;
  }
}

/** The E.164 form of a configured number ("+" optional in the variable). */
export const plus = (n: string): string => (n.startsWith("+") ? n : `+${n}`);
