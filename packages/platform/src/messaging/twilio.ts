import { createHmac } from "node:crypto";
import { z } from "zod";
import { providerUrl } from "../config-section.ts";
import { failureReason } from "./failure.ts";
import { type MessagingProvider, type SettingsOf, plus, sameString } from "./provider.ts";

/**
 * Twilio Programmable Messaging, the `sms` provider: our number's configuration, the signed
 * inbound-message webhook (X-Twilio-Signature) and its form, and sending an SMS through the REST
 * API (the session service's replies, the verification service's outbound codes). The auth token
 * goes only into the Authorization header, never into an error.
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

const config = {
  SMS_PHONE_NUMBER: z
    .string()
    .regex(/^\+?[1-9]\d{6,14}$/, "must be an E.164 number")
    .optional(),
  TWILIO_API_URL: providerUrl("https://api.twilio.com"),
  TWILIO_ACCOUNT_SID: z
    .string()
    .regex(/^AC[0-9a-fA-F]{32}$/, "must be a Twilio account SID (AC + 32 hex digits)")
    .optional(),
  TWILIO_AUTH_TOKEN: z.string().min(16).optional(),
};
export type SmsSettings = SettingsOf<typeof config>;

/**
 * Twilio's X-Twilio-Signature for a request: base64 HMAC-SHA1, keyed with the auth token, of the
 * full URL Twilio requested (with its query string) followed by every POST parameter's name and
 * value, in parameter-name order (case-sensitive code-unit order), with no separators.
 */
export function twilioSignature(authToken: string, url: string, params: Record<string, string>): string {
  const names = Object.keys(params).sort();
  let data = url;
  for (const name of names) data += name + params[name];
  return createHmac("sha1", authToken).update(data, "utf8").digest("base64");
}

/** The URL with its default port written out and left out (Twilio may sign either form); only the URL itself otherwise. */
function urlForms(url: string): string[] {
  const m = /^(https?):\/\/([^/?#@]*@)?(\[[^\]]*\]|[^/?#:]*)(?::(\d*))?(.*)$/is.exec(url);
  if (!m) return [url];
  const [, scheme, userinfo = "", host, port, rest] = m;
  const defaultPort = scheme.toLowerCase() === "https" ? "443" : "80";
  if (port !== undefined && port !== defaultPort) return [url];
  const head = `${scheme}://${userinfo}${host}`;
  return [url, port === undefined ? `${head}:${defaultPort}${rest}` : `${head}${rest}`];
}

/**
 * True when `header` is Twilio's signature of this request: `url` is the full public URL Twilio
 * was configured with (including any query string), `params` the form fields it posted. Like
 * Twilio's own helpers, a URL on the default port is accepted signed with or without the port.
 */
export function twilioSignatureValid(authToken: string, url: string, params: Record<string, string>, header: string | undefined): boolean {
  if (!authToken || typeof header !== "string" || header === "") return false;
  let valid = false;
  for (const form of urlForms(url)) valid = sameString(twilioSignature(authToken, form, params), header) || valid;
  return valid;
}

/** One SMS a user sent to our number. */
export interface SmsInbound {
  /** Twilio's message SID ("SM…"), unique per message: use it to ignore redeliveries. */
  sid: string;
  /** The sender, E.164 ("+15551234567"). */
  from: string;
  /** Our number that received it, E.164. */
  to: string;
  /** The text (empty for a picture-only message). */
  body: string;
}

const formOf = (body: Uint8Array | string) => new URLSearchParams(typeof body === "string" ? body : new TextDecoder().decode(body));

/** Reads Twilio's application/x-www-form-urlencoded inbound-SMS fields; undefined without a SID, From or To. */
export function parseTwilioForm(body: Uint8Array | string): SmsInbound | undefined {
  const params = formOf(body);
  const sid = params.get("MessageSid") || params.get("SmsSid");
  const from = params.get("From");
  const to = params.get("To");
  if (!sid || !from || !to) return undefined;
  return { sid, from, to, body: params.get("Body") ?? "" };
}

/** SMS through Twilio: the sender's number (From) comes with every message; the deep link is an RFC 5724 sms: URI. */
export const sms: MessagingProvider<typeof config> = {
  name: "sms",
  label: "SMS",
  flow: "number",
  config,
  missing: (c) => (["SMS_PHONE_NUMBER", "TWILIO_ACCOUNT_SID", "TWILIO_AUTH_TOKEN"] as const).filter((n) => !c[n]),
  placeholder: "+15550002000",
  address: (c) => plus(c.SMS_PHONE_NUMBER ?? sms.placeholder),
  deepLink: (address, _payload, prefill) => `sms:${address}?body=${encodeURIComponent(prefill)}`,
  expectedMessage: (_payload, prefill) => prefill,
  hook(c) {
    const authToken = c.TWILIO_AUTH_TOKEN;
    if (!authToken) return undefined;
    return {
      // Twilio signs the URL it was configured with: {PUBLIC_BASE_URL}/hooks/sms
      verify: (req) => twilioSignatureValid(authToken, req.url, Object.fromEntries(formOf(req.body)), req.header("x-twilio-signature")),
      // replies go out through the Messages API, so the TwiML answer is empty
      answer: { type: "text/xml", body: '<?xml version="1.0" encoding="UTF-8"?><Response></Response>' },
    };
  },
  parse(body) {
    const m = parseTwilioForm(body);
    return m ? [{ id: m.sid, replyTo: m.from, sender: { phone: m.from }, text: m.body }] : undefined;
  },
  messenger(c) {
    if (!c.TWILIO_ACCOUNT_SID || !c.TWILIO_AUTH_TOKEN || !c.SMS_PHONE_NUMBER) return undefined;
    const client = new TwilioClient({ apiUrl: c.TWILIO_API_URL, accountSid: c.TWILIO_ACCOUNT_SID, authToken: c.TWILIO_AUTH_TOKEN, from: c.SMS_PHONE_NUMBER });
    return { send: (to, text) => client.sendSms(to, text) };
  },
};
