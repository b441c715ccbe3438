import { createHmac } from "node:crypto";
import type { Client } from "@connectrpc/connect";
import type { VerificationService } from "@icv/contracts/gen/icv/verification/v1/verification_service_pb.ts";
import {
  AppError,
  isMessagingChannel,
  messagingProvider,
  providerPhone,
  type Clock,
  type InboundMessage,
  type Keyboard,
  type Logger,
  type Messenger,
} from "@icv/platform";
import type { AnswerOutcome, Sessions } from "./sessions.ts";
import type { InboundStore } from "./store/inbound.ts";
import { REPLY, branded } from "./texts.ts";
import { SESSION_TOKEN_RE } from "./tokens.ts";

/** The throttle's sender of a message: its provider-attested number, or the chat user on that provider. */
const senderKey = (provider: string, m: InboundMessage): string | undefined => {
  if ("user" in m.sender) return `${provider}:${m.sender.user}`;
  const phone = providerPhone(m.sender.phone);
  return phone ? `phone:${phone}` : undefined;
};

/** The clients that send the bots' replies, by provider (absent when the provider is not configured). */
export type Repliers = Partial<Record<string, Messenger>>;

export interface InboundDeps {
  store: InboundStore;
  sessions: Sessions;
  verification: Client<typeof VerificationService>;
  repliers: Repliers;
  clock: Clock;
  logger: Logger;
  /** Keys the sender ids the throttle stores (an HMAC, never the number itself). */
  hmacKey: string;
}

/** Inbound codes per sender (DECISIONS.md, Sessions): after this many unknown or wrong ones in the window, the sender is ignored. */
export const SENDER_STRIKES = 10;
export const SENDER_WINDOW_MS = 3600_000;
/** The outcomes that count against the sender: a code or token we do not know, or one meant for another number. */
const STRIKE_OUTCOMES = new Set(["unknown_code", "unknown", "wrong_sender", "failed"]);

/** A claim on a message left unfinished by a crash is taken over after this long. */
const STALE_CLAIM_MS = 60_000;
/** How long a chat (Telegram, Viber) waits for the contact after it was opened (the longest phone challenge). */
export const CHAT_TTL_MS = 10 * 60_000;

/** What a message's text asks for: a phone verification's code, a session token, or nothing we know. */
export function readText(text: string | undefined): { kind: "code" | "session"; value: string } | undefined {
  if (!text) return undefined;
  // "/start <payload>" from a t.me deep link, a code typed alone, or the pre-filled "…: <token>"
  const words = text
    .trim()
    .replace(/^\/start(@\w+)?\s*/i, "")
    .split(/\s+/)
    .filter(Boolean);
  // a message of one word may be a code in any case; in a sentence only an upper-case code counts
  const code = words.length === 1 ? /^[A-Za-z0-9]{6}$/ : /^[A-Z0-9]{6}$/;
  for (const w of words.reverse()) {
    if (SESSION_TOKEN_RE.test(w)) return { kind: "session", value: w };
    if (code.test(w)) return { kind: "code", value: w.toUpperCase() };
  }
  return undefined;
}

type CodeOutcome = "verified" | "already_verified" | "wrong_sender" | "failed" | "expired" | "not_pending" | "unknown_code";

function replyFor(outcome: CodeOutcome | AnswerOutcome, attemptsRemaining = 0, kind: "code" | "session" = "code"): string {
  switch (outcome) {
    case "verified":
      return kind === "code" ? REPLY.verified : REPLY.sessionVerified;
    case "already_verified":
      return REPLY.alreadyVerified;
    case "wrong_sender":
      return kind === "code" ? REPLY.wrongSender(attemptsRemaining) : REPLY.authFailed;
    case "failed":
      return REPLY.failed;
    case "expired":
      return REPLY.expired;
    case "not_pending":
      return REPLY.notPending;
    default:
      return REPLY.unknown;
  }
}

/**
 * Inbound provider deliveries, already signature-checked by the gateway, read by the provider's
 * file (the table in @icv/platform) into common messages. Each message is handled once (a
 * provider's retry of a handled message changes nothing), settles a phone verification (reverse
 * OTP: code + sender) or a session (token + sender), and gets a reply telling the user what
 * happened. Replies are sent after the state change and never fail the delivery; a reply to a
 * message opening a conversation where the provider wants it so (Viber's welcome message) is the
 * delivery's answer instead.
 */
export class Inbound {
  private readonly replies = new Set<Promise<void>>();

  constructor(private readonly d: InboundDeps) {}

  /** What each message of the delivery did. */
  async handle(provider: string, body: Uint8Array): Promise<string[]> {
    return (await this.deliver(provider, body)).outcomes;
  }

  /** What each message of the delivery did, and the body to answer the delivery with, if any. */
  async deliver(provider: string, body: Uint8Array): Promise<{ outcomes: string[]; answer?: string }> {
    if (!isMessagingChannel(provider)) throw new AppError("validation_error", `unknown provider ${provider}`);
    const p = messagingProvider(provider);
    const messages = p.parse(body);
    if (!messages) throw new AppError("validation_error", `not a ${p.label} delivery`);
    const messenger = this.d.repliers[provider];
    const outcomes: string[] = [];
    let answer: string | undefined;
    for (const m of messages) {
      if (m.ignored) {
        outcomes.push("ignored");
        continue;
      }
      const say = (text: string, keyboard?: Keyboard) => {
        if (m.opening && messenger?.welcome) answer = messenger.welcome(text, keyboard);
        else this.reply(() => messenger?.send(m.replyTo, text, keyboard));
      };
      const sender = senderKey(provider, m);
      outcomes.push(
        await this.once(provider, m.id, sender, (key, strikes) =>
          p.flow === "number" ? this.byNumber(provider, key, strikes, m, say) : this.byChat(provider, key, strikes, m, say),
        ),
      );
    }
    return { outcomes, answer };
  }

  /** Waits for replies still being sent (shutdown). */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.replies]);
  }

  /**
   * Runs a message's handler once per provider message id; the handler gets the message's key
   * ("provider:id") and its sender's strikes in the window, counted by the claim's statement.
   */
  private async once(provider: string, messageId: string, sender: string | undefined, run: (key: string, strikes: number) => Promise<string>): Promise<string> {
    const now = this.d.clock.now();
    const counted = sender ? { id: this.senderId(sender), since: new Date(now.getTime() - SENDER_WINDOW_MS) } : undefined;
    const { claim, strikes } = await this.d.store.claimInbound(provider, messageId, now, STALE_CLAIM_MS, counted);
    if (claim === "done") return "duplicate";
    if (claim === "busy") throw new AppError("service_unavailable", "this message is being handled; retry later");
    let outcome: string;
    try {
      outcome = await run(`${provider}:${messageId}`, strikes);
    } catch (e) {
      await this.d.store.releaseInbound(provider, messageId).catch(() => undefined);
      throw e;
    }
    await this.d.store.finishInbound(provider, messageId, outcome);
    return outcome;
  }

  /** A provider that attests the sender's number (WhatsApp, SMS): the message settles at once. */
  private async byNumber(channel: string, key: string, strikes: number, m: InboundMessage, say: (t: string) => void): Promise<string> {
    const phone = "phone" in m.sender ? providerPhone(m.sender.phone) : undefined;
    const sender = phone ? `phone:${phone}` : undefined;
    if (sender && (await this.throttled(sender, strikes, say))) return "throttled";
    const asked = readText(m.text);
    if (!asked || !phone) {
      say(REPLY.help);
      return "unrecognized";
    }
    if (asked.kind === "code") {
      const r = await this.d.verification.completeInboundCode({ channel, code: asked.value, sender: phone, messageKey: key });
      await this.strike(sender!, key, r.outcome);
      say(r.reply ?? branded(r.businessName, replyFor(r.outcome as CodeOutcome, r.attemptsRemaining)));
      return r.outcome;
    }
    const outcome = await this.d.sessions.answerToken(asked.value, channel, phone);
    await this.strike(sender!, key, outcome);
    const token = asked.value;
    this.reply(async () => say(await this.sessionReply(token, outcome)));
    return outcome;
  }

  /**
   * A chat provider (Telegram, Viber) gives no number with a message: the deep link's payload
   * (`/start <code or token>`, Viber's context) opens a conversation and the bot asks for the
   * contact (a keyboard button); only the sender's own contact counts, and its number settles
   * what the conversation was opened for.
   */
  private async byChat(channel: string, key: string, strikes: number, m: InboundMessage, say: (text: string, keyboard?: Keyboard) => void): Promise<string> {
    const { store, clock } = this.d;
    const user = "user" in m.sender ? m.sender.user : "";
    const sender = `${channel}:${user}`;
    if (await this.throttled(sender, strikes, (t) => say(t, { remove: true }))) return "throttled";

    if (m.contact) {
      const chat = await store.chat(channel, m.replyTo, clock.now(), CHAT_TTL_MS);
      if (!chat || chat.user_id !== user) {
        say(REPLY.noConversation, { remove: true });
        return "no_conversation";
      }
      if (!m.contact.own) {
        say(REPLY.foreignContact, { requestContact: REPLY.shareButton });
        return "foreign_contact";
      }
      const phone = providerPhone(m.contact.phone);
      if (!phone) {
        say(REPLY.unknown, { remove: true });
        return "unrecognized";
      }
      let outcome: string;
      let text: string;
      if (chat.target_kind === "code") {
        const r = await this.d.verification.completeInboundCode({ channel, code: chat.target, sender: phone, messageKey: key });
        outcome = r.outcome;
        text = r.reply ?? branded(r.businessName, replyFor(r.outcome as CodeOutcome, r.attemptsRemaining));
      } else {
        const o = await this.d.sessions.answerToken(chat.target, channel, phone);
        outcome = o;
        text = await this.sessionReply(chat.target, o);
      }
      await store.endChat(channel, m.replyTo);
      await this.strike(sender, key, outcome);
      say(text, { remove: true });
      return outcome;
    }

    const asked = readText(m.context ?? m.text);
    if (!asked) {
      say(REPLY.help);
      return "unrecognized";
    }
    if (asked.kind === "session" && !(await this.d.sessions.isOpen(asked.value, channel))) {
      await this.strike(sender, key, "unknown");
      say(REPLY.unknown);
      return "unknown";
    }
    await store.startChat({
      provider: channel,
      chat_id: m.replyTo,
      user_id: user,
      target_kind: asked.kind,
      target: asked.value,
      started_at: clock.now(),
    });
    say(REPLY.askContact, { requestContact: REPLY.shareButton });
    return "contact_requested";
  }

  /**
   * Whether the sender (a provider-attested number, or a Telegram user) is throttled: SENDER_STRIKES
   * unknown or wrong codes within the window. A throttled message is ignored; the first one in the
   * window gets one reply saying so (not a retry of it, nor one arriving at the same time).
   */
  private async throttled(sender: string, strikes: number, reply: (t: string) => Promise<void> | void | undefined): Promise<boolean> {
    if (strikes < SENDER_STRIKES) return false;
    const now = this.d.clock.now();
    if (await this.d.store.claimThrottleNotice(this.senderId(sender), now, new Date(now.getTime() - SENDER_WINDOW_MS))) {
      this.reply(async () => void (await reply(REPLY.throttled)));
    }
    this.d.logger.info({ sender_kind: sender.split(":")[0], strikes }, "inbound sender throttled");
    return true;
  }

  /** Counts an unknown or wrong code against its sender, once per provider message. */
  private async strike(sender: string, key: string, outcome: string): Promise<void> {
    if (STRIKE_OUTCOMES.has(outcome)) await this.d.store.recordStrike(key, this.senderId(sender), "strike", this.d.clock.now());
  }

  private senderId(sender: string): string {
    return createHmac("sha256", this.d.hmacKey).update(`inbound sender:${sender}`).digest("hex");
  }

  /** A session's reply: its project's template, else the built-in text with the project's business name; a failure to render falls back to the built-in text. */
  private async sessionReply(token: string, outcome: AnswerOutcome): Promise<string> {
    const builtIn = replyFor(outcome, 0, "session");
    const r = await this.d.sessions.projectReply(token, outcome).catch((err: unknown) => {
      this.d.logger.warn({ err: err instanceof Error ? err.message : String(err) }, "project reply failed; built-in text used");
      return {} as { text?: string; businessName?: string };
    });
    return r.text ?? branded(r.businessName, builtIn);
  }

  /** Sends a reply in the background; a failure is logged, never thrown (the state change stands). */
  private reply(send: () => Promise<void> | undefined): void {
    const p = Promise.resolve()
      .then(send)
      .catch((err: unknown) => this.d.logger.warn({ err: err instanceof Error ? err.message : String(err) }, "bot reply failed"))
      .finally(() => this.replies.delete(p));
    this.replies.add(p);
  }
}
