import { createHmac } from "node:crypto";
import type { Client } from "@connectrpc/connect";
import type { VerificationService } from "@icv/contracts/gen/icv/verification/v1/verification_service_pb.ts";
import { AppError, providerPhone, type Clock, type Logger } from "@icv/platform";
import { parseTelegramUpdate, type TelegramClient, type TelegramMessage } from "./providers/telegram.ts";
import { parseTwilioForm, type TwilioClient } from "./providers/twilio.ts";
import { parseWhatsAppWebhook, type WhatsAppClient } from "./providers/whatsapp.ts";
import type { AnswerOutcome, Sessions } from "./sessions.ts";
import type { SessionStore } from "./store.ts";
import { REPLY, branded } from "./texts.ts";
import { SESSION_TOKEN_RE } from "./tokens.ts";

export type Provider = "telegram" | "whatsapp" | "sms";

/** The throttle's sender of a WhatsApp or SMS message: its provider-attested number. */
const phoneSender = (from: string): string | undefined => {
  const phone = providerPhone(from);
  return phone ? `phone:${phone}` : undefined;
};

/** The clients that send the bots' replies (absent when the provider is not configured). */
export interface Repliers {
  telegram?: TelegramClient;
  whatsapp?: WhatsAppClient;
  sms?: TwilioClient;
}

export interface InboundDeps {
  store: SessionStore;
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
/** How long a Telegram chat waits for the contact after /start (the longest phone challenge). */
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
 * Inbound provider updates, already signature-checked by the gateway: Telegram updates, WhatsApp
 * Cloud API webhooks, Twilio SMS webhooks. Each message is handled once (a provider's retry of a
 * handled message changes nothing), settles a phone verification (reverse OTP: code + sender) or
 * a session (token + sender), and gets a reply telling the user what happened. Replies are sent
 * after the state change and never fail the update.
 */
export class Inbound {
  private readonly replies = new Set<Promise<void>>();

  constructor(private readonly d: InboundDeps) {}

  async handle(provider: Provider, body: Uint8Array): Promise<string[]> {
    if (provider === "telegram") {
      const u = parseTelegramUpdate(body);
      if (!u) throw new AppError("validation_error", "not a Telegram update");
      if (!u.message) return ["ignored"];
      const msg = u.message;
      const sender = msg.from ? `telegram:${msg.from.id}` : undefined;
      return [await this.once("telegram", String(u.update_id), sender, (key, strikes) => this.telegram(msg, key, strikes))];
    }
    if (provider === "whatsapp") {
      const out: string[] = [];
      for (const m of parseWhatsAppWebhook(body)) {
        const reply = (t: string) => this.d.repliers.whatsapp?.sendText(m.from, t);
        out.push(await this.once("whatsapp", m.id, phoneSender(m.from), (key, strikes) => this.byNumber("whatsapp", key, strikes, m.from, m.text, reply)));
      }
      return out;
    }
    if (provider === "sms") {
      const m = parseTwilioForm(body);
      if (!m) throw new AppError("validation_error", "not a Twilio message webhook");
      const reply = (t: string) => this.d.repliers.sms?.sendSms(m.from, t);
      return [await this.once("sms", m.sid, phoneSender(m.from), (key, strikes) => this.byNumber("sms", key, strikes, m.from, m.body, reply))];
    }
    throw new AppError("validation_error", `unknown provider ${provider}`);
  }

  /** Waits for replies still being sent (shutdown). */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.replies]);
  }

  /**
   * Runs a message's handler once per provider message id; the handler gets the message's key
   * ("provider:id") and its sender's strikes in the window, counted by the claim's statement.
   */
  private async once(
    provider: Provider,
    messageId: string,
    sender: string | undefined,
    run: (key: string, strikes: number) => Promise<string>,
  ): Promise<string> {
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

  /** WhatsApp and SMS: the sender's number is known, so the message settles at once. */
  private async byNumber(
    channel: "whatsapp" | "sms",
    key: string,
    strikes: number,
    from: string,
    text: string | undefined,
    reply: (t: string) => Promise<void> | undefined,
  ): Promise<string> {
    const phone = providerPhone(from);
    const sender = phone ? `phone:${phone}` : undefined;
    if (sender && (await this.throttled(sender, strikes, reply))) return "throttled";
    const asked = readText(text);
    if (!asked || !phone) {
      this.reply(() => reply(REPLY.help));
      return "unrecognized";
    }
    if (asked.kind === "code") {
      const r = await this.d.verification.completeInboundCode({ channel, code: asked.value, sender: phone, messageKey: key });
      await this.strike(sender!, key, r.outcome);
      this.reply(() => reply(r.reply ?? branded(r.businessName, replyFor(r.outcome as CodeOutcome, r.attemptsRemaining))));
      return r.outcome;
    }
    const outcome = await this.d.sessions.answerToken(asked.value, channel, phone);
    await this.strike(sender!, key, outcome);
    const token = asked.value;
    this.reply(async () => reply(await this.sessionReply(token, outcome)));
    return outcome;
  }

  /**
   * Telegram gives no number with a message: /start <code or token> opens a conversation and the
   * bot asks for the contact (a keyboard button); only a contact whose user_id is the sender's
   * own counts, and its number settles what /start named.
   */
  private async telegram(msg: TelegramMessage, key: string, strikes: number): Promise<string> {
    const { store, clock } = this.d;
    const bot = this.d.repliers.telegram;
    const chatId = msg.chat.id;
    const say = (text: string, keyboard?: { requestContact: string } | { remove: true }) => this.reply(() => bot?.sendMessage(chatId, text, keyboard));
    // only people, in the private chat with the bot (in a group another member could answer)
    if (!msg.from || msg.from.is_bot || msg.chat.type !== "private") return "ignored";
    const sender = `telegram:${msg.from.id}`;
    if (await this.throttled(sender, strikes, (t) => say(t, { remove: true }))) return "throttled";

    if (msg.contact) {
      const chat = await store.chat(String(chatId), clock.now(), CHAT_TTL_MS);
      if (!chat || chat.user_id !== String(msg.from.id)) {
        say(REPLY.noConversation, { remove: true });
        return "no_conversation";
      }
      if (msg.contact.user_id !== msg.from.id) {
        say(REPLY.foreignContact, { requestContact: REPLY.shareButton });
        return "foreign_contact";
      }
      const phone = providerPhone(msg.contact.phone_number);
      if (!phone) {
        say(REPLY.unknown, { remove: true });
        return "unrecognized";
      }
      let outcome: string;
      let text: string;
      if (chat.target_kind === "code") {
        const r = await this.d.verification.completeInboundCode({ channel: "telegram", code: chat.target, sender: phone, messageKey: key });
        outcome = r.outcome;
        text = r.reply ?? branded(r.businessName, replyFor(r.outcome as CodeOutcome, r.attemptsRemaining));
      } else {
        const o = await this.d.sessions.answerToken(chat.target, "telegram", phone);
        outcome = o;
        text = await this.sessionReply(chat.target, o);
      }
      await store.endChat(String(chatId));
      await this.strike(sender, key, outcome);
      say(text, { remove: true });
      return outcome;
    }

    const asked = readText(msg.text);
    if (!asked) {
      say(REPLY.help);
      return "unrecognized";
    }
    if (asked.kind === "session" && !(await this.d.sessions.isOpen(asked.value, "telegram"))) {
      await this.strike(sender, key, "unknown");
      say(REPLY.unknown);
      return "unknown";
    }
    await store.startChat({
      chat_id: String(chatId),
      user_id: String(msg.from.id),
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
