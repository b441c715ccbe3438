import { z } from "zod";
import { failureReason } from "./failure.ts";

/**
 * Twilio Programmable Messaging: sending an SMS through the REST API (the session service's
 * replies, the verification service's outbound codes). The auth token goes only into the
 * Authorization header, never into an error.
 */

/** A refused or failed Twilio API call; the message carries Twilio's error code and text, never the token. */
export class TwilioApiError extends Error {
  constructor(
    message: string,
    /** The HTTP status, when Twilio answered. */
    readonly status?: number,
    /** Twilio's error code (20003: authentication failed; 21211: invalid 'To' number…). */
    readonly code?: number,
  ) {
    super(message);
    this.name = "TwilioApiError";
  }
}

const twilioErrorSchema = z.object({ code: z.number().optional(), message: z.string().optional() });

/** Sends SMS from one Twilio number through the Messages API. */
export class TwilioClient {
  private readonly url: string;
  private readonly auth: string;
  private readonly token: string;
  private readonly from: string;
  private readonly timeoutMs: number;

  constructor(o: { apiUrl: string; accountSid: string; authToken: string; from: string; timeoutMs?: number }) {
    this.url = `${o.apiUrl.replace(/\/+$/, "")}/2010-04-01/Accounts/${encodeURIComponent(o.accountSid)}/Messages.json`;
    this.auth = `Basic ${Buffer.from(`${o.accountSid}:${o.authToken}`).toString("base64")}`;
    this.token = o.authToken;
    this.from = o.from;
    this.timeoutMs = o.timeoutMs ?? 10_000;
  }

  /** Sends an SMS to an E.164 number; resolves once Twilio has accepted (queued) it. */
  async sendSms(to: string, body: string): Promise<void> {
    let res: Response;
    try {
      res = await fetch(this.url, {
        method: "POST",
        headers: { authorization: this.auth, "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
        body: new URLSearchParams({ To: to, From: this.from, Body: body }).toString(),
        signal: AbortSignal.timeout(this.timeoutMs),
        redirect: "error",
      });
    } catch (e) {
      throw new TwilioApiError(`Twilio send failed: ${failureReason(e)}`);
    }
    const json: unknown = await res.json().catch(() => undefined);
    if (res.ok) return;
    const t = twilioErrorSchema.safeParse(json);
    const code = t.success ? t.data.code : undefined;
    const detail = ((t.success ? t.data.message : undefined) ?? "no message").split(this.token).join("[redacted]");
    throw new TwilioApiError(`Twilio send failed: HTTP ${res.status} code ${code ?? "?"}: ${detail}`, res.status, code);
  }
}
