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
