import { z } from "zod";
export { WhatsAppApiError, WhatsAppClient } from "@icv/platform";

/**
 * WhatsApp Cloud API (Meta Graph API): reading the messages of a webhook delivery. Sending
 * (WhatsAppClient) lives in @icv/platform (messaging/whatsapp.ts): the verification service
 * sends template messages with it too.
 */

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
  let root: unknown;
  try {
    root = JSON.parse(typeof body === "string" ? body : new TextDecoder().decode(body));
  } catch {
    return [];
  }
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
