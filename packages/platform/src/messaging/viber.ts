import { createHmac, timingSafeEqual } from "node:crypto";
import { z } from "zod";
import { providerUrl } from "../config-section.ts";
import { failureReason } from "./failure.ts";
import { type InboundMessage, type Keyboard, type MessagingProvider, type SettingsOf, jsonOf } from "./provider.ts";

/**
 * Viber REST bot API: the bot's configuration, the signed callbacks (X-Viber-Content-Signature:
 * hex HMAC-SHA256 of the raw body keyed by the auth token) and their events, the deep link
 * `viber://pa?chatURI=<uri>&context=<payload>`, and send_message / set_webhook. A chat gives a
 * Viber user id, no number: the deep link's `context` (a code or session token) opens the
 * conversation, the bot's welcome message carries a share-phone keyboard, and the shared
 * contact's number settles what the conversation was opened for. The auth token goes only into
 * the X-Viber-Auth-Token header, never into an error.
 */

const config = {
  VIBER_API_URL: providerUrl("https://chatapi.viber.com/pa"),
  // the bot's public URI (the chatURI of its deep links)
  VIBER_BOT_URI: z
    .string()
    .regex(/^[A-Za-z0-9._-]{3,64}$/, "must be the bot's URI (the chatURI of viber://pa?chatURI=…)")
    .optional(),
  VIBER_AUTH_TOKEN: z
    .string()
    .regex(/^[A-Za-z0-9-]{16,128}$/, "must be the bot's authentication token")
    .optional(),
  // the sender name on the bot's messages (Viber allows at most 28 characters)
  VIBER_SENDER_NAME: z.string().min(1).max(28).default("Verification"),
};
export type ViberSettings = SettingsOf<typeof config>;

/** The X-Viber-Content-Signature of a callback body: hex HMAC-SHA256 keyed by the bot's auth token. */
export function viberSignature(authToken: string, rawBody: Uint8Array | string): string {
  return createHmac("sha256", authToken).update(rawBody).digest("hex");
}

/** True when `header` is the X-Viber-Content-Signature of exactly these body bytes. */
export function viberSignatureValid(authToken: string, rawBody: Buffer, header: string | undefined): boolean {
  if (!authToken || typeof header !== "string" || !/^[0-9a-fA-F]{64}$/.test(header.trim())) return false;
  return timingSafeEqual(createHmac("sha256", authToken).update(rawBody).digest(), Buffer.from(header.trim(), "hex"));
}

/** A refused or failed REST bot API call: Viber's status and status_message, never the token. */
export class ViberApiError extends Error {
  constructor(
    message: string,
    /** Viber's status (2 invalidAuthToken, 3 badData, 5 receiverNotRegistered, 6 receiverNotSubscribed…). */
    readonly status?: number,
  ) {
    super(message);
    this.name = "ViberApiError";
  }
}

const answerSchema = z.object({ status: z.number().int(), status_message: z.string().optional() });

/** The share-phone keyboard (min_api_version 3), or none. */
function keyboardOf(keyboard: Keyboard | undefined): Record<string, unknown> {
  if (!keyboard || !("requestContact" in keyboard)) return {};
  return {
    min_api_version: 3,
    keyboard: {
      Type: "keyboard",
      InputFieldState: "hidden",
      Buttons: [{ ActionType: "share-phone", ActionBody: "share-phone", Text: keyboard.requestContact, Columns: 6, Rows: 1 }],
    },
  };
}

/** A client for send_message and set_webhook of one bot. */
export class ViberClient {
  private readonly base: string;
  private readonly token: string;
  private readonly name: string;
  private readonly timeoutMs: number;

  constructor(o: { apiUrl: string; authToken: string; senderName: string; timeoutMs?: number }) {
    this.base = o.apiUrl.replace(/\/+$/, "");
    this.token = o.authToken;
    this.name = o.senderName;
    this.timeoutMs = o.timeoutMs ?? 10_000;
  }

  /** The message body send_message takes (and a welcome message answers conversation_started with). */
  message(text: string, keyboard?: Keyboard, receiver?: string): Record<string, unknown> {
    return { ...(receiver ? { receiver } : {}), sender: { name: this.name }, type: "text", text, ...keyboardOf(keyboard) };
  }

  /** Sends a text message to a subscribed user, optionally with the share-phone keyboard. */
  async sendMessage(receiver: string, text: string, keyboard?: Keyboard): Promise<void> {
    await this.call("send_message", this.message(text, keyboard, receiver));
  }

  /** Points the bot's callbacks at our hook (Viber checks it at once with a signed `webhook` event). */
  async setWebhook(url: string): Promise<void> {
    await this.call("set_webhook", { url, send_name: false, send_photo: false });
  }

  private async call(method: string, body: Record<string, unknown>): Promise<void> {
    let res: Response;
    try {
      res = await fetch(`${this.base}/${method}`, {
        method: "POST",
        headers: { "x-viber-auth-token": this.token, "content-type": "application/json" },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
        redirect: "error",
      });
    } catch (e) {
      throw new ViberApiError(`Viber ${method} failed: ${failureReason(e)}`);
    }
    const a = answerSchema.safeParse(await res.json().catch(() => undefined));
    if (!res.ok || !a.success) throw new ViberApiError(`Viber ${method} failed: HTTP ${res.status}${a.success ? "" : " with an unexpected answer"}`);
    if (a.data.status !== 0) {
      const detail = (a.data.status_message ?? "no message").split(this.token).join("[redacted]");
      throw new ViberApiError(`Viber ${method} failed: status ${a.data.status} ${detail}`, a.data.status);
    }
  }
}

const userSchema = z.object({ id: z.string().min(1).max(128) });
const callbackSchema = z.discriminatedUnion("event", [
  z.object({ event: z.literal("conversation_started"), user: userSchema, context: z.string().max(512).optional() }),
  z.object({
    event: z.literal("message"),
    sender: userSchema,
    message: z.object({
      type: z.string(),
      text: z.string().optional(),
      contact: z.object({ phone_number: z.string().min(1).max(64) }).optional(),
    }),
  }),
]);

/**
 * Reads one callback: conversation_started (its `context`) and message (text, or the contact the
 * share-phone button shares) give a message; other events (delivered, seen, subscribed, the
 * `webhook` check…) give none; undefined when the body is not a Viber callback. message_token is
 * a 64-bit integer, read from the text so that JSON numbers do not round it.
 */
export function parseViberCallback(body: Uint8Array | string): InboundMessage[] | undefined {
  const text = typeof body === "string" ? body : new TextDecoder().decode(body);
  const root = jsonOf(text);
  if (typeof root !== "object" || root === null || typeof (root as { event?: unknown }).event !== "string") return undefined;
  const token = /"message_token"\s*:\s*"?(\d{1,20})"?/.exec(text)?.[1];
  const c = callbackSchema.safeParse(root);
  if (!c.success || !token) return [];
  if (c.data.event === "conversation_started") {
    const user = c.data.user.id;
    return [{ id: token, replyTo: user, sender: { user }, context: c.data.context, opening: true }];
  }
  const { sender, message } = c.data;
  const contact = message.type === "contact" && message.contact ? { phone: message.contact.phone_number, own: true } : undefined;
  return [{ id: token, replyTo: sender.id, sender: { user: sender.id }, text: message.type === "text" ? message.text : undefined, contact }];
}

/** Viber: a chat provider whose conversation opens with the deep link's context and whose welcome message is the callback's answer. */
export const viber: MessagingProvider<typeof config> = {
  name: "viber",
  label: "Viber",
  flow: "chat",
  config,
  missing: (c) => (["VIBER_BOT_URI", "VIBER_AUTH_TOKEN"] as const).filter((n) => !c[n]),
  placeholder: "icv-test-bot",
  address: (c) => c.VIBER_BOT_URI ?? viber.placeholder,
  deepLink: (address, payload) => `viber://pa?chatURI=${encodeURIComponent(address)}&context=${encodeURIComponent(payload)}`,
  expectedMessage: (payload) => payload,
  hook(c) {
    const token = c.VIBER_AUTH_TOKEN;
    if (!token) return undefined;
    return {
      verify: (req) => viberSignatureValid(token, req.body, req.header("x-viber-content-signature")),
      answer: { type: "application/json", body: JSON.stringify({ status: 0 }) },
    };
  },
  parse: parseViberCallback,
  messenger(c) {
    if (!c.VIBER_AUTH_TOKEN) return undefined;
    const client = new ViberClient({ apiUrl: c.VIBER_API_URL, authToken: c.VIBER_AUTH_TOKEN, senderName: c.VIBER_SENDER_NAME });
    return {
      send: (to, text, keyboard) => client.sendMessage(to, text, keyboard),
      welcome: (text, keyboard) => JSON.stringify(client.message(text, keyboard)),
    };
  },
  start(c, { publicBaseUrl, log }) {
    if (!c.VIBER_AUTH_TOKEN || !c.VIBER_BOT_URI) return undefined;
    const url = `${publicBaseUrl}/hooks/viber`;
    void new ViberClient({ apiUrl: c.VIBER_API_URL, authToken: c.VIBER_AUTH_TOKEN, senderName: c.VIBER_SENDER_NAME }).setWebhook(url).then(
      () => log.info({ url }, "viber: webhook set"),
      (err: Error) => log.error({ err: err.message }, "viber: set_webhook failed"),
    );
    return undefined;
  },
};
