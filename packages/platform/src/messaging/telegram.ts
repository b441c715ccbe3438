import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import { providerUrl } from "../config-section.ts";
import { failureReason } from "./failure.ts";
import { type InboundMessage, type Keyboard, type MessagingProvider, type SettingsOf, jsonOf, secretTokenValid } from "./provider.ts";

/**
 * Telegram Bot API: the bot's configuration, the update types we read, a client for the few methods we call, and a
 * long-polling loop for local development. The bot token is part of every request URL, so no
 * error this file throws or logs carries the URL, a fetch error's text or its cause.
 */

/** A user as Telegram describes the sender of a message. */
export interface TelegramUser {
  id: number;
  is_bot?: boolean;
  first_name?: string;
  username?: string;
}

/** A shared contact (the "share my phone number" button answers with one). */
export interface TelegramContact {
  phone_number: string;
  user_id?: number;
  first_name?: string;
}

/** The part of a Telegram Message we read; other message kinds arrive without text or contact. */
export interface TelegramMessage {
  message_id: number;
  from?: TelegramUser;
  chat: { id: number; type: string };
  date: number;
  text?: string;
  contact?: TelegramContact;
}

/** One Telegram update; `message` is absent for kinds we do not ask for or cannot read. */
export interface TelegramUpdate {
  update_id: number;
  message?: TelegramMessage;
}

const int = z.number().int();
const userSchema = z.object({
  id: int,
  is_bot: z.boolean().optional(),
  first_name: z.string().optional(),
  username: z.string().optional(),
});
const contactSchema = z.object({ phone_number: z.string().min(1), user_id: int.optional(), first_name: z.string().optional() });
const messageSchema = z.object({
  message_id: int,
  from: userSchema.optional(),
  chat: z.object({ id: int, type: z.string() }),
  date: int,
  text: z.string().optional(),
  contact: contactSchema.optional(),
});
const updateIdSchema = z.object({ update_id: int.nonnegative() });

/**
 * Reads one update from an already-parsed JSON value: undefined without a numeric update_id; a
 * message of an unexpected shape is dropped (the update is kept so that its id is still
 * acknowledged).
 */
export function telegramUpdateFrom(value: unknown): TelegramUpdate | undefined {
  const id = updateIdSchema.safeParse(value);
  if (!id.success) return undefined;
  const update: TelegramUpdate = { update_id: id.data.update_id };
  const m = messageSchema.safeParse((value as { message?: unknown }).message);
  if (m.success) update.message = m.data;
  return update;
}

/** Parses a webhook body into an update; undefined when it is not JSON or has no numeric update_id. */
export function parseTelegramUpdate(body: Uint8Array | string): TelegramUpdate | undefined {
  return telegramUpdateFrom(jsonOf(body));
}

/** A refused or failed Bot API call. The message names the method and Telegram's answer, never the token. */
export class TelegramApiError extends Error {
  constructor(
    readonly method: string,
    message: string,
    /** Telegram's error_code (usually the HTTP status), when it answered. */
    readonly errorCode?: number,
    /** Seconds Telegram asked us to wait (429 Too Many Requests). */
    readonly retryAfter?: number,
  ) {
    super(message);
    this.name = "TelegramApiError";
  }
}

/** The keyboard under a sent message: one "share my phone number" button, or none. */
export type TelegramKeyboard = Keyboard;

const envelopeSchema = z.object({
  ok: z.boolean(),
  result: z.unknown().optional(),
  error_code: z.number().optional(),
  description: z.string().optional(),
  parameters: z.object({ retry_after: z.number().optional() }).optional(),
});

/** A client for the Telegram Bot API methods ICV uses (sendMessage, setWebhook, deleteWebhook, getUpdates). */
export class TelegramClient {
  private readonly base: string;
  private readonly token: string;
  private readonly timeoutMs: number;

  constructor(o: { apiUrl: string; botToken: string; timeoutMs?: number }) {
    this.base = o.apiUrl.replace(/\/+$/, "");
    this.token = o.botToken;
    this.timeoutMs = o.timeoutMs ?? 10_000;
  }

  /** Sends a text message to a chat, optionally with a "share contact" keyboard or removing the keyboard. */
  async sendMessage(chatId: number, text: string, keyboard?: TelegramKeyboard): Promise<void> {
    const body: Record<string, unknown> = { chat_id: chatId, text };
    if (keyboard && "requestContact" in keyboard) {
      body.reply_markup = {
        keyboard: [[{ text: keyboard.requestContact, request_contact: true }]],
        one_time_keyboard: true,
        resize_keyboard: true,
      };
    } else if (keyboard && "remove" in keyboard) {
      body.reply_markup = { remove_keyboard: true };
    }
    await this.call("sendMessage", body);
  }

  /** Points Telegram at our webhook; Telegram will send `secretToken` in X-Telegram-Bot-Api-Secret-Token. */
  async setWebhook(url: string, secretToken: string): Promise<void> {
    await this.call("setWebhook", { url, secret_token: secretToken, allowed_updates: ["message"] });
  }

  /** Removes the webhook (required before getUpdates works). Pending updates are kept. */
  async deleteWebhook(): Promise<void> {
    await this.call("deleteWebhook", {});
  }

  /**
   * Long-polls for updates with update_id >= offset (which also acknowledges every update below
   * it), waiting up to `timeoutS` seconds. `signal` cancels the wait.
   */
  async getUpdates(offset: number | undefined, timeoutS: number, signal?: AbortSignal): Promise<TelegramUpdate[]> {
    const body: Record<string, unknown> = { timeout: timeoutS, allowed_updates: ["message"] };
    if (offset !== undefined) body.offset = offset;
    const result = await this.call("getUpdates", body, timeoutS * 1000 + this.timeoutMs, signal);
    if (!Array.isArray(result)) throw new TelegramApiError("getUpdates", "Telegram getUpdates answered a result that is not a list");
    return result.map(telegramUpdateFrom).filter((u): u is TelegramUpdate => u !== undefined);
  }

  private async call(method: string, body: object, timeoutMs = this.timeoutMs, signal?: AbortSignal): Promise<unknown> {
    const timeout = AbortSignal.timeout(timeoutMs);
    let res: Response;
    try {
      res = await fetch(`${this.base}/bot${this.token}/${method}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
        redirect: "error",
      });
    } catch (e) {
      throw new TelegramApiError(method, `Telegram ${method} failed: ${failureReason(e)}`);
    }
    let json: unknown;
    try {
      json = await res.json();
    } catch (e) {
      const why = res.ok ? `an answer that is not JSON (${failureReason(e)})` : `HTTP ${res.status}`;
      throw new TelegramApiError(method, `Telegram ${method} failed: ${why}`, res.ok ? undefined : res.status);
    }
    const env = envelopeSchema.safeParse(json);
    if (!env.success) throw new TelegramApiError(method, `Telegram ${method} failed: HTTP ${res.status} with an unexpected answer`, res.status);
    if (!env.data.ok || !res.ok) {
      const code = env.data.error_code ?? res.status;
      const description = (env.data.description ?? "no description").split(this.token).join("[redacted]");
      throw new TelegramApiError(method, `Telegram ${method} failed: ${code} ${description}`, code, env.data.parameters?.retry_after);
    }
    return env.data.result;
  }
}

/** What the polling loop needs to log with (a pino logger fits). */
export interface WarnLogger {
  warn(obj: object, msg: string): void;
}

/**
 * Runs the getUpdates long-polling loop (TELEGRAM_MODE=polling): removes the webhook once, then
 * asks for updates from the last handled update_id + 1 and hands them to `handle` one at a time,
 * in order. A handler error is logged and the update still counts as handled (the handler is
 * idempotent); a failed call is retried after `retryMs` (or after Telegram's retry_after).
 * stop() cancels the pending poll and resolves once the loop has ended; updates handled since the
 * last poll are acknowledged by the next run's first poll, so they may be handed over again then.
 */
export function startTelegramPolling(
  client: Pick<TelegramClient, "deleteWebhook" | "getUpdates">,
  handle: (u: TelegramUpdate) => Promise<void>,
  log: WarnLogger,
  opts: { timeoutS?: number; retryMs?: number } = {},
): { stop(): Promise<void> } {
  const timeoutS = opts.timeoutS ?? 30;
  const retryMs = opts.retryMs ?? 1_000;
  const stopping = new AbortController();
  const { signal } = stopping;

  const loop = async () => {
    let webhookDeleted = false;
    let offset: number | undefined;
    while (!signal.aborted) {
      try {
        if (!webhookDeleted) {
          await client.deleteWebhook();
          webhookDeleted = true;
        }
        const updates = await client.getUpdates(offset, timeoutS, signal);
        for (const u of updates) {
          if (signal.aborted) break;
          if (offset !== undefined && u.update_id < offset) continue;
          try {
            await handle(u);
          } catch (err) {
            log.warn({ err, updateId: u.update_id }, "telegram update handler failed; the update is skipped");
          }
          offset = u.update_id + 1;
        }
      } catch (err) {
        if (signal.aborted) break;
        const retryAfter = err instanceof TelegramApiError && err.retryAfter ? err.retryAfter * 1000 : 0;
        const waitMs = Math.max(retryMs, retryAfter);
        log.warn({ err: err instanceof Error ? err.message : String(err), retryInMs: waitMs }, "telegram polling failed; retrying");
        await sleep(waitMs, undefined, { signal }).catch(() => undefined);
      }
    }
  };
  const done = loop();
  return {
    stop() {
      stopping.abort();
      return done;
    },
  };
}

const config = {
  TELEGRAM_API_URL: providerUrl("https://api.telegram.org"),
  TELEGRAM_BOT_USERNAME: z
    .string()
    .regex(/^[A-Za-z0-9_]{5,32}$/, "must be a bot username without @")
    .optional(),
  TELEGRAM_BOT_TOKEN: z
    .string()
    .regex(/^\d{5,16}:[A-Za-z0-9_-]{30,64}$/, "must be a bot token from @BotFather (digits:secret)")
    .optional(),
  // webhook: Telegram posts updates to {PUBLIC_BASE_URL}/hooks/telegram (setWebhook at start); polling: getUpdates (local development)
  TELEGRAM_MODE: z.enum(["webhook", "polling"]).default("webhook"),
  TELEGRAM_WEBHOOK_SECRET: z
    .string()
    .regex(/^[A-Za-z0-9_-]{16,256}$/, "must be 16 to 256 of A-Z, a-z, 0-9, _ and -")
    .optional(),
};
export type TelegramSettings = SettingsOf<typeof config>;

/** The update as common messages: only people in their private chat with the bot count (in a group another member could answer). */
function messagesOf(u: TelegramUpdate): InboundMessage[] {
  const m = u.message;
  const id = String(u.update_id);
  if (!m) return [{ id, replyTo: "", sender: { user: "" }, ignored: true }];
  const replyTo = String(m.chat.id);
  if (!m.from || m.from.is_bot || m.chat.type !== "private") return [{ id, replyTo, sender: { user: m.from ? String(m.from.id) : "" }, ignored: true }];
  const contact = m.contact ? { phone: m.contact.phone_number, own: m.contact.user_id === m.from.id } : undefined;
  return [{ id, replyTo, sender: { user: String(m.from.id) }, text: m.text, contact }];
}

/**
 * Telegram: a chat gives no number, so `/start <code or token>` (the t.me deep link) opens a
 * conversation and the bot asks for the contact; the hook is checked by the secret token given
 * to setWebhook.
 */
export const telegram: MessagingProvider<typeof config> = {
  name: "telegram",
  label: "Telegram",
  flow: "chat",
  config,
  missing: (c) =>
    (["TELEGRAM_BOT_USERNAME", "TELEGRAM_BOT_TOKEN", ...(c.TELEGRAM_MODE === "webhook" ? (["TELEGRAM_WEBHOOK_SECRET"] as const) : [])] as const).filter(
      (n) => !c[n],
    ),
  placeholder: "@icv_test_bot",
  address: (c) => (c.TELEGRAM_BOT_USERNAME ? `@${c.TELEGRAM_BOT_USERNAME}` : telegram.placeholder),
  deepLink: (address, payload) => `https://t.me/${address.slice(1)}?start=${payload}`,
  expectedMessage: (payload) => `/start ${payload}`,
  hook(c) {
    const secret = c.TELEGRAM_WEBHOOK_SECRET;
    if (!c.TELEGRAM_BOT_TOKEN || !secret || c.TELEGRAM_MODE !== "webhook") return undefined;
    return {
      verify: (req) => secretTokenValid(secret, req.header("x-telegram-bot-api-secret-token")),
      answer: { type: "application/json", body: JSON.stringify({ ok: true }) },
    };
  },
  parse(body) {
    const u = parseTelegramUpdate(body);
    return u ? messagesOf(u) : undefined;
  },
  messenger(c) {
    if (!c.TELEGRAM_BOT_TOKEN) return undefined;
    const client = new TelegramClient({ apiUrl: c.TELEGRAM_API_URL, botToken: c.TELEGRAM_BOT_TOKEN });
    return { send: (to, text, keyboard) => client.sendMessage(Number(to), text, keyboard) };
  },
  // polling: the getUpdates loop (local development); webhook: setWebhook, in the background and a
  // failure only logged (the rest of the service works, and the next start tries again)
  start(c, { publicBaseUrl, deliver, log }) {
    if (!c.TELEGRAM_BOT_TOKEN) return undefined;
    const bot = new TelegramClient({ apiUrl: c.TELEGRAM_API_URL, botToken: c.TELEGRAM_BOT_TOKEN });
    if (c.TELEGRAM_MODE === "polling") {
      log.info("telegram: long polling for updates");
      return startTelegramPolling(bot, (u) => deliver(Buffer.from(JSON.stringify(u))), log);
    }
    if (!c.TELEGRAM_WEBHOOK_SECRET) return undefined;
    const url = `${publicBaseUrl}/hooks/telegram`;
    void bot.setWebhook(url, c.TELEGRAM_WEBHOOK_SECRET).then(
      () => log.info({ url }, "telegram: webhook set"),
      (err: Error) => log.error({ err: err.message }, "telegram: setWebhook failed"),
    );
    return undefined;
  },
};
