import { createHmac, timingSafeEqual } from "node:crypto";
import { z } from "zod";
import { providerUrl } from "../config-section.ts";
import { failureReason } from "./failure.ts";
import { type InboundMessage, type MessagingProvider, type SettingsOf, jsonOf, plus, secretTokenValid } from "./provider.ts";

/**
 * WhatsApp Cloud API (Meta Graph API): the configuration of our business number, the signed
 * webhook (X-Hub-Signature-256) and its messages, and sending a text message (the session
 * service's replies) or a template message (the verification service's outbound codes). The
 * access token goes only into the Authorization header and never into an error.
 */

/** A refused or failed Cloud API call; the message carries Graph's error code and text, never the token. */
export class WhatsAppApiError extends Error {
  constructor(
    message: string,
    /** The HTTP status, when the Graph API answered. */
    readonly status?: number,
    /** Graph's error.code (190: token invalid or expired; 131047: outside the 24-hour window…). */
    readonly code?: number,
  ) {
    super(message);
    this.name = "WhatsAppApiError";
  }
}

const graphErrorSchema = z.object({
  error: z.object({ message: z.string().optional(), type: z.string().optional(), code: z.number().optional() }),
});

/** Sends WhatsApp messages from one business phone number through the Cloud API. */
export class WhatsAppClient {
  private readonly url: string;
  private readonly token: string;
  private readonly timeoutMs: number;

  constructor(o: { apiUrl: string; phoneNumberId: string; accessToken: string; timeoutMs?: number }) {
    this.url = `${o.apiUrl.replace(/\/+$/, "")}/${encodeURIComponent(o.phoneNumberId)}/messages`;
    this.token = o.accessToken;
    this.timeoutMs = o.timeoutMs ?? 10_000;
  }

  /** Sends a plain text message (no link preview) to a WhatsApp id (inside the 24-hour window the user opened). */
  async sendText(toWaId: string, text: string): Promise<void> {
    await this.post({
      messaging_product: "whatsapp",
      recipient_type: "individual",
      to: toWaId,
      type: "text",
      text: { preview_url: false, body: text },
    });
  }

  /**
   * Sends a one-time code in an approved *authentication* template (the only kind WhatsApp lets a
   * business send first, outside a 24-hour window): the code is the body parameter and the
   * parameter of the copy-code button (index 0), as Meta's authentication templates take it.
   */
  async sendCodeTemplate(toWaId: string, template: { name: string; language: string }, code: string): Promise<void> {
    await this.post({
      messaging_product: "whatsapp",
      recipient_type: "individual",
      to: toWaId,
      type: "template",
      template: {
        name: template.name,
        language: { code: template.language },
        components: [
          { type: "body", parameters: [{ type: "text", text: code }] },
          { type: "button", sub_type: "url", index: "0", parameters: [{ type: "text", text: code }] },
        ],
      },
    });
  }

  private async post(payload: Record<string, unknown>): Promise<void> {
    let res: Response;
    try {
      res = await fetch(this.url, {
        method: "POST",
        headers: { authorization: `Bearer ${this.token}`, "content-type": "application/json" },
        body: JSON.stringify(payload),
        signal: AbortSignal.timeout(this.timeoutMs),
        redirect: "error",
      });
    } catch (e) {
      throw new WhatsAppApiError(`WhatsApp send failed: ${failureReason(e)}`);
    }
    const json: unknown = await res.json().catch(() => undefined);
    if (res.ok) {
      const ids = (json as { messages?: unknown } | undefined)?.messages;
      if (!Array.isArray(ids) || ids.length === 0) throw new WhatsAppApiError(`WhatsApp send failed: HTTP ${res.status} without a message id`, res.status);
      return;
    }
    const g = graphErrorSchema.safeParse(json);
    if (!g.success) throw new WhatsAppApiError(`WhatsApp send failed: HTTP ${res.status}`, res.status);
    const { code, type, message } = g.data.error;
    const detail = (message ?? "no message").split(this.token).join("[redacted]");
    throw new WhatsAppApiError(`WhatsApp send failed: HTTP ${res.status} ${type ?? "error"} ${code ?? "?"}: ${detail}`, res.status, code);
  }
}

const e164 = z
  .string()
  .regex(/^\+?[1-9]\d{6,14}$/, "must be an E.164 number")
  .optional();

const config = {
  WHATSAPP_PHONE_NUMBER: e164,
  WHATSAPP_API_URL: providerUrl("https://graph.facebook.com/v21.0"),
  WHATSAPP_PHONE_NUMBER_ID: z
    .string()
    .regex(/^\d{5,32}$/, "must be the numeric phone number id of the WhatsApp Business account")
    .optional(),
  WHATSAPP_ACCESS_TOKEN: z.string().min(16).optional(),
  WHATSAPP_APP_SECRET: z.string().min(16).optional(),
  WHATSAPP_VERIFY_TOKEN: z.string().min(16).optional(),
  // outbound phone codes (delivery "outbound"): the approved authentication template and its language
  WHATSAPP_OTP_TEMPLATE: z
    .string()
    .regex(/^[a-z0-9_]{1,512}$/, "must be a WhatsApp template name (a-z, 0-9, _)")
    .default("verification_code"),
  WHATSAPP_OTP_TEMPLATE_LANG: z
    .string()
    .regex(/^[a-z]{2,3}(_[A-Z]{2})?$/, "must be a WhatsApp template language code (en, en_US…)")
    .default("en_US"),
};
export type WhatsAppSettings = SettingsOf<typeof config>;

/** The X-Hub-Signature-256 value Meta sends with a webhook body: "sha256=" + hex HMAC-SHA256(appSecret, body). */
export function whatsappSignature(appSecret: string, rawBody: Uint8Array | string): string {
  return `sha256=${createHmac("sha256", appSecret).update(rawBody).digest("hex")}`;
}

/** True when `header` is the X-Hub-Signature-256 of exactly these body bytes under the app secret. */
export function whatsappSignatureValid(appSecret: string, rawBody: Buffer, header: string | undefined): boolean {
  if (!appSecret || typeof header !== "string") return false;
  const m = /^sha256=([0-9a-fA-F]{64})$/.exec(header.trim());
  if (!m) return false;
  const expected = createHmac("sha256", appSecret).update(rawBody).digest();
  return timingSafeEqual(expected, Buffer.from(m[1], "hex"));
}

/** One message a user sent to our WhatsApp number. */
export interface WhatsAppInbound {
  /** The message id ("wamid.…"), unique per message: use it to ignore redeliveries. */
  id: string;
  /** The sender's WhatsApp id: the phone number in digits, without "+". */
  from: string;
  /** The text typed, or the label of the button tapped; undefined for media and other kinds. */
  text?: string;
  /** When the user sent it, in Unix seconds. */
  timestamp: number;
  /** Which of our numbers received it (metadata.phone_number_id of the delivery). */
  phoneNumberId?: string;
}

const messageSchema = z.object({
  id: z.string().min(1),
  from: z.string().regex(/^\d{1,20}$/),
  timestamp: z.union([z.string().regex(/^\d{1,12}$/), z.number().int().nonnegative()]),
  type: z.string().optional(),
  text: z.object({ body: z.string() }).optional(),
  button: z.object({ text: z.string() }).optional(),
  interactive: z
    .object({
      button_reply: z.object({ title: z.string() }).optional(),
      list_reply: z.object({ title: z.string() }).optional(),
    })
    .optional(),
});
type RawMessage = z.infer<typeof messageSchema>;

const valueSchema = z.object({
  metadata: z.object({ phone_number_id: z.string().optional() }).optional(),
  messages: z.array(z.unknown()).optional(),
});

function textOf(m: RawMessage): string | undefined {
  switch (m.type) {
    case "text":
      return m.text?.body;
    case "button":
      return m.button?.text;
    case "interactive":
      return m.interactive?.button_reply?.title ?? m.interactive?.list_reply?.title;
    default:
      return undefined;
  }
}

/** Reads `object: "whatsapp_business_account"` webhook deliveries into user messages; statuses and malformed entries give none. */
export function parseWhatsAppWebhook(body: Uint8Array | string): WhatsAppInbound[] {
  const root = jsonOf(body);
  if (typeof root !== "object" || root === null || (root as { object?: unknown }).object !== "whatsapp_business_account") return [];
  const entries = (root as { entry?: unknown }).entry;
  if (!Array.isArray(entries)) return [];
  const out: WhatsAppInbound[] = [];
  for (const entry of entries) {
    const changes = (entry as { changes?: unknown } | null)?.changes;
    if (!Array.isArray(changes)) continue;
    for (const change of changes) {
      const value = valueSchema.safeParse((change as { value?: unknown } | null)?.value);
      if (!value.success) continue;
      const phoneNumberId = value.data.metadata?.phone_number_id;
      for (const raw of value.data.messages ?? []) {
        const m = messageSchema.safeParse(raw);
        if (!m.success) continue;
        const inbound: WhatsAppInbound = { id: m.data.id, from: m.data.from, timestamp: Number(m.data.timestamp), text: textOf(m.data) };
        if (phoneNumberId !== undefined) inbound.phoneNumberId = phoneNumberId;
        out.push(inbound);
      }
    }
  }
  return out;
}

/** WhatsApp: the sender's number (its wa_id) comes with every message. */
export const whatsapp: MessagingProvider<typeof config> = {
  name: "whatsapp",
  label: "WhatsApp",
  flow: "number",
  config,
  missing: (c) => (["WHATSAPP_PHONE_NUMBER", "WHATSAPP_PHONE_NUMBER_ID", "WHATSAPP_ACCESS_TOKEN", "WHATSAPP_APP_SECRET"] as const).filter((n) => !c[n]),
  placeholder: "+15550001000",
  address: (c) => plus(c.WHATSAPP_PHONE_NUMBER ?? whatsapp.placeholder),
  deepLink: (address, _payload, prefill) => `https://wa.me/${address.slice(1)}?text=${encodeURIComponent(prefill)}`,
  expectedMessage: (_payload, prefill) => prefill,
  hook(c) {
    const appSecret = c.WHATSAPP_APP_SECRET;
    if (!appSecret) return undefined;
    const verifyToken = c.WHATSAPP_VERIFY_TOKEN;
    return {
      verify: (req) => whatsappSignatureValid(appSecret, req.body, req.header("x-hub-signature-256")),
      answer: { type: "application/json", body: JSON.stringify({ ok: true }) },
      // Meta's subscription handshake: hub.verify_token = WHATSAPP_VERIFY_TOKEN
      handshake(q) {
        const challenge = q["hub.challenge"];
        const got = q["hub.verify_token"];
        const ok = q["hub.mode"] === "subscribe" && verifyToken && secretTokenValid(verifyToken, typeof got === "string" ? got : undefined);
        return ok && typeof challenge === "string" && challenge ? challenge : undefined;
      },
    };
  },
  parse: (body): InboundMessage[] => parseWhatsAppWebhook(body).map((m) => ({ id: m.id, replyTo: m.from, sender: { phone: m.from }, text: m.text })),
  messenger(c) {
    if (!c.WHATSAPP_PHONE_NUMBER_ID || !c.WHATSAPP_ACCESS_TOKEN) return undefined;
    const client = new WhatsAppClient({ apiUrl: c.WHATSAPP_API_URL, phoneNumberId: c.WHATSAPP_PHONE_NUMBER_ID, accessToken: c.WHATSAPP_ACCESS_TOKEN });
    return { send: (to, text) => client.sendText(to, text) };
  },
};
