import { parsePhoneNumberFromString } from "libphonenumber-js";
import type { Config } from "./config.ts";

/** The messaging channels whose provider is configured by environment (phone codes and sessions). */
export type MessagingChannel = "whatsapp" | "telegram" | "sms";

/**
 * The environment variables a live verification or session on this messaging channel needs and
 * lacks ([] when it can run): the number or bot users write to, what checks their inbound
 * messages, and what sends the replies. Test keys need none: nothing is sent in test mode.
 */
export function missingMessagingProvider(channel: MessagingChannel, config: Config): string[] {
  const names: Record<MessagingChannel, (keyof Config)[]> = {
    whatsapp: ["WHATSAPP_PHONE_NUMBER", "WHATSAPP_PHONE_NUMBER_ID", "WHATSAPP_ACCESS_TOKEN", "WHATSAPP_APP_SECRET"],
    telegram: ["TELEGRAM_BOT_USERNAME", "TELEGRAM_BOT_TOKEN", ...(config.TELEGRAM_MODE === "webhook" ? (["TELEGRAM_WEBHOOK_SECRET"] as const) : [])],
    sms: ["SMS_PHONE_NUMBER", "TWILIO_ACCOUNT_SID", "TWILIO_AUTH_TOKEN"],
  };
  return names[channel].filter((n) => !config[n]);
}

/** Placeholders that test-mode deep links use when no provider is configured (documented in the README). */
export const MESSAGING_TEST_PLACEHOLDERS = {
  telegramBot: "icv_test_bot",
  whatsappNumber: "+15550001000",
  smsNumber: "+15550002000",
};

/**
 * A test-mode deep link to the placeholder Telegram bot: a public username this service does not
 * own, so the hosted pages never offer it as a link (a tester's code would go to a stranger's
 * bot); a configured TELEGRAM_BOT_USERNAME gives real links instead.
 */
export const isPlaceholderBotLink = (link: string): boolean => link.startsWith(`https://t.me/${MESSAGING_TEST_PLACEHOLDERS.telegramBot}?`);

/**
 * Where users write on a messaging channel: `@bot` for telegram, our E.164 number for whatsapp
 * and sms; the test placeholders when the provider is not configured (live keys never get that
 * far: missingMessagingProvider refuses them first).
 */
export function messagingAddress(channel: MessagingChannel, config: Config): string {
  if (channel === "telegram") return `@${config.TELEGRAM_BOT_USERNAME ?? MESSAGING_TEST_PLACEHOLDERS.telegramBot}`;
  const n = (channel === "whatsapp" ? config.WHATSAPP_PHONE_NUMBER : config.SMS_PHONE_NUMBER) ?? MESSAGING_TEST_PLACEHOLDERS[`${channel}Number`];
  return n.startsWith("+") ? n : `+${n}`;
}

/**
 * A number a messaging provider attests (a WhatsApp wa_id, a Telegram contact, Twilio's From),
 * `+` optional: E.164 when it is a *possible* number. The provider has delivered a message from
 * it, so the stricter validity check of tenant input (whose ranges lag new allocations, and which
 * refuses the documented test number +15555550100) is not applied. Undefined when impossible.
 */
export function providerPhone(raw: string): string | undefined {
  const s = raw.trim();
  const parsed = parsePhoneNumberFromString(s.startsWith("+") ? s : `+${s}`);
  return parsed && !parsed.ext && parsed.isPossible() ? parsed.number : undefined;
}
