/**
 * The one way a verification code leaves the service (create and resend, every channel that
 * sends one: email, domain by email, outbound sms and whatsapp): it sends what messages.ts
 * composed.
 */
import {
  AppError,
  TwilioApiError,
  WhatsAppApiError,
  codeSendFailures,
  codeSends,
  messagingAddress,
  newId,
  type Config,
  type Logger,
  type Scope,
  type TwilioClient,
  type WhatsAppClient,
} from "@icv/platform";
import type { TestMessageRow } from "../store/rows.ts";
import type { Mailer } from "./mailer.ts";
import type { ComposedCode } from "./messages.ts";
import { assertSmsDestination } from "./send-limits.ts";

export type { CodeChannel } from "../channels/channel.ts";

export interface DeliveryDeps {
  config: Config;
  logger: Logger;
  /** Absent when SMTP is not configured. */
  mailer?: Mailer;
  /** Absent when the provider is not configured (messagingSenders in @icv/platform). */
  whatsapp?: WhatsAppClient;
  sms?: TwilioClient;
}

/**
 * Sends a composed code. Live scopes send through the provider; a failed send is
 * `service_unavailable` and logs the provider's status and error code only (never the number,
 * the code or a token). Test scopes send nothing: the answer is the message that would have gone
 * out, for GET /test/messages (the caller stores it with the row).
 */
export async function deliverCode(d: DeliveryDeps, scope: Scope, m: ComposedCode, now: Date): Promise<TestMessageRow | undefined> {
  // test keys too: a test verification is refused where a live one would be
  if (m.channel === "sms") assertSmsDestination(m.to, d.config);
  codeSends.inc({ channel: m.channel, environment: scope.env });
  if (scope.env === "test") {
    const base = {
      id: newId("testMessage", now.getTime()),
      tenant_id: scope.tenantId,
      environment: "test" as const,
      verification_id: m.verificationId,
      session_id: null,
      channel: m.channel,
      direction: "outbound" as const,
      created_at: now,
    };
    if (m.channel === "email") return { ...base, from_address: null, to_address: m.mail.to, subject: m.mail.subject, body: m.mail.text };
    const from = messagingAddress(m.channel, d.config);
    const subject = m.channel === "whatsapp" ? `WhatsApp template ${d.config.WHATSAPP_OTP_TEMPLATE} (${d.config.WHATSAPP_OTP_TEMPLATE_LANG})` : null;
    return { ...base, from_address: from, to_address: m.to, subject, body: m.text };
  }
  if (m.channel === "email") {
    if (!d.mailer) throw new AppError("channel_unavailable", "email is not configured on this service (missing SMTP_URL)");
    await d.mailer.send(m.mail);
    return undefined;
  }
  try {
    if (m.channel === "sms") {
      if (!d.sms)
        throw new AppError("channel_unavailable", "sms is not configured on this service (missing TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN or SMS_PHONE_NUMBER)");
      await d.sms.sendSms(m.to, m.text);
    } else {
      if (!d.whatsapp)
        throw new AppError("channel_unavailable", "whatsapp is not configured on this service (missing WHATSAPP_PHONE_NUMBER_ID or WHATSAPP_ACCESS_TOKEN)");
      const template = { name: d.config.WHATSAPP_OTP_TEMPLATE, language: d.config.WHATSAPP_OTP_TEMPLATE_LANG };
      await d.whatsapp.sendCodeTemplate(m.to.replace(/^\+/, ""), template, m.code);
    }
  } catch (e) {
    if (!(e instanceof TwilioApiError || e instanceof WhatsAppApiError)) throw e;
    codeSendFailures.inc({ channel: m.channel });
    // the provider's message may name the number: log its status and error code only
    d.logger.warn({ verification_id: m.verificationId, channel: m.channel, provider_status: e.status, provider_code: e.code }, "code send failed");
    throw new AppError("service_unavailable", `the ${m.channel === "sms" ? "SMS" : "WhatsApp message"} could not be sent; try again`);
  }
  return undefined;
}
