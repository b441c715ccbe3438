export { TwilioApiError, TwilioClient } from "@icv/platform";

/**
 * Twilio Programmable SMS: reading an inbound-message webhook (a form POST). Sending an SMS
 * (TwilioClient) lives in @icv/platform (messaging/twilio.ts): the verification service sends codes with it too.
 */

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

/** Reads Twilio's application/x-www-form-urlencoded inbound-SMS fields; undefined without a SID, From or To. */
export function parseTwilioForm(body: Uint8Array | string): SmsInbound | undefined {
  const params = new URLSearchParams(typeof body === "string" ? body : new TextDecoder().decode(body));
  const sid = params.get("MessageSid") || params.get("SmsSid");
  const from = params.get("From");
  const to = params.get("To");
  if (!sid || !from || !to) return undefined;
  return { sid, from, to, body: params.get("Body") ?? "" };
}
