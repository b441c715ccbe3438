import type { Config } from "../config.ts";
import { TwilioClient } from "./twilio.ts";
import { WhatsAppClient } from "./whatsapp.ts";

/**
 * The clients that send outbound phone codes (one copy for every service): WhatsApp Cloud API
 * templates from our business number, Twilio Messages from our SMS number; absent when not
 * configured. Replies in conversations go through each provider's messenger instead.
 */
export function messagingSenders(config: Config): { whatsapp?: WhatsAppClient; sms?: TwilioClient } {
  return {
    whatsapp:
      config.WHATSAPP_PHONE_NUMBER_ID && config.WHATSAPP_ACCESS_TOKEN
        ? new WhatsAppClient({
            apiUrl: config.WHATSAPP_API_URL,
            phoneNumberId: config.WHATSAPP_PHONE_NUMBER_ID,
            accessToken: config.WHATSAPP_ACCESS_TOKEN,
          })
        : undefined,
    sms:
      config.TWILIO_ACCOUNT_SID && config.TWILIO_AUTH_TOKEN && config.SMS_PHONE_NUMBER
        ? new TwilioClient({
            apiUrl: config.TWILIO_API_URL,
            accountSid: config.TWILIO_ACCOUNT_SID,
            authToken: config.TWILIO_AUTH_TOKEN,
            from: config.SMS_PHONE_NUMBER,
          })
        : undefined,
  };
}
