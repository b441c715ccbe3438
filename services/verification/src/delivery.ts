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
import type { ChallengeSpec, CodeChannel } from "./channels/channel.ts";
import { channelFor } from "./channels/registry.ts";
import { codeMail, type Mail, type Mailer } from "./mailer.ts";
import { brandMail, phoneWords, type CodeWords } from "./messages.ts";
import { assertSmsDestination } from "./send-limits.ts";
import type { TestMessageRow } from "./store/index.ts";

export type { CodeChannel } from "./channels/channel.ts";

/** One code to deliver: where, over what, and the words around it. */
export interface CodeMessage {
  verificationId: string;
  channel: CodeChannel;
  /** An email address, or an E.164 number. */
  to: string;
  code: string;
  /** How long the code works, in minutes. */
  minutes: number;
  /** Email only: what the code confirms ("your email address", "control of example.com"). */
  purpose: string;
  /** A resend: the message says earlier codes no longer work. */
  resent?: boolean;
  /** The project's words and branding (messages.ts codeWords); absent: the built-in text. */
  words?: CodeWords;
}

/**
 * The text of a phone code: an SMS is the project's template (or the branded built-in text); a
 * WhatsApp code goes as the approved authentication template, whose words are Meta's, so its
 * test-mode record is the built-in text.
 */
function smsText(m: CodeMessage, host: string): string {
  const builtIn = phoneCodeText(m.code, m.minutes, host, m.resent);
  return m.channel === "sms" ? phoneWords(m.words ?? {}, builtIn, m.code, host) : builtIn;
}

/** The mail of a code: the project's rendered template, else the built-in text with its branding. */
function mailOf(m: CodeMessage): Mail {
  const r = m.words?.rendered;
  if (r) return { to: m.to, subject: r.subject!, text: r.text, html: r.html!, fromName: m.words?.project?.business_name ?? undefined };
  return brandMail(codeMail(m.to, m.code, m.minutes, m.purpose, { resent: m.resent }), m.words?.project);
}

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
 * The text of a phone code (the SMS body; the test-mode record of a WhatsApp template). The last
 * line is the origin-bound one-time-code format (WebOTP, iOS/Android autofill) for our host.
 */
export function phoneCodeText(code: string, minutes: number, host: string, resent = false): string {
  const replaced = resent ? " Earlier codes no longer work." : "";
  return `Your verification code is ${code}. It expires in ${minutes} minutes.${replaced} Do not share it with anyone.\n\n@${host} #${code}`;
}

/**
 * The one way a verification code leaves the service (create and resend, every channel that
 * sends one: email, domain by email, outbound sms and whatsapp). Live scopes send through the
 * provider; a failed send is `service_unavailable` and logs the provider's status and error
 * code only (never the number, the code or a token). Test scopes send nothing: the answer is the
 * message that would have gone out, for GET /test/messages (the caller stores it with the row).
 */
export async function deliverCode(d: DeliveryDeps, scope: Scope, m: CodeMessage, now: Date): Promise<TestMessageRow | undefined> {
  // test keys too: a test verification is refused where a live one would be
  if (m.channel === "sms") assertSmsDestination(m.to, d.config);
  codeSends.inc({ channel: m.channel, environment: scope.env });
  const host = new URL(d.config.publicBaseUrl).hostname;
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
    if (m.channel === "email") {
      const mail = mailOf(m);
      return { ...base, from_address: null, to_address: mail.to, subject: mail.subject, body: mail.text };
    }
    const from = messagingAddress(m.channel, d.config);
    const subject = m.channel === "whatsapp" ? `WhatsApp template ${d.config.WHATSAPP_OTP_TEMPLATE} (${d.config.WHATSAPP_OTP_TEMPLATE_LANG})` : null;
    return { ...base, from_address: from, to_address: m.to, subject, body: smsText(m, host) };
  }
  if (m.channel === "email") {
    if (!d.mailer) throw new AppError("channel_unavailable", "email is not configured on this service (missing SMTP_URL)");
    await d.mailer.send(mailOf(m));
    return undefined;
  }
  try {
    if (m.channel === "sms") {
      if (!d.sms)
        throw new AppError("channel_unavailable", "sms is not configured on this service (missing TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN or SMS_PHONE_NUMBER)");
      await d.sms.sendSms(m.to, smsText(m, host));
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

/**
 * Test mode (GET /test/messages), reverse OTP: the code message a test verification expects
 * from the user (the message the deep link pre-fills, inbound from the user's number to our
 * number or bot; the channel's testMessage). Messages the service sends (codes to an email or
 * a phone) come from deliverCode. Undefined for anything else.
 */
export function testMessageOf(
  config: Config,
  scope: Scope,
  v: { id: string; type: string; channel: string; identifier: string },
  ch: ChallengeSpec,
  now: Date,
): TestMessageRow | undefined {
  const expected = ch.code && !ch.sendTo ? channelFor(v.type, v.channel).testMessage?.(ch.code, config) : undefined;
  if (!expected) return undefined;
  return {
    id: newId("testMessage", now.getTime()),
    tenant_id: scope.tenantId,
    environment: "test",
    verification_id: v.id,
    session_id: null,
    channel: v.channel,
    direction: "inbound",
    from_address: v.identifier,
    to_address: expected.to,
    subject: null,
    body: expected.body,
    created_at: now,
  };
}

/** Where a verification's code is sent by the service (the challenge's sendTo and sendOver), and the words around it. */
export function codeTarget(v: { type: string; channel: string }, ch: ChallengeSpec) {
  return {
    channel: ch.sendOver!,
    to: ch.sendTo!,
    code: ch.code!,
    minutes: Math.round(channelFor(v.type, v.channel).ttlMs / 60_000),
    purpose: ch.purpose ?? "",
  };
}
