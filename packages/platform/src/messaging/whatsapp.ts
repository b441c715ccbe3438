import { z } from "zod";
import { failureReason } from "./failure.ts";

/**
 * WhatsApp Cloud API (Meta Graph API): sending a text message (the session service's replies) or
 * a template message (the verification service's outbound codes). The access token goes only
 * into the Authorization header and never into an error.
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
