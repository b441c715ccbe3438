import { parsePhoneNumberFromString } from "libphonenumber-js";
import type { Config } from "./config.ts";
import { MESSAGING_PROVIDERS, type MessagingChannel, messagingProvider, messagingProviders } from "./messaging/registry.ts";

export type { MessagingChannel } from "./messaging/registry.ts";

/** The messaging channels (phone codes and sessions), in the table's order. */
export const MESSAGING_CHANNELS = Object.keys(MESSAGING_PROVIDERS) as MessagingChannel[];

/**
 * The environment variables a live verification or session on this messaging channel needs and
 * lacks ([] when it can run): the number or bot users write to, what checks their inbound
 * messages, and what sends the replies. Test keys need none: nothing is sent in test mode.
 */
export function missingMessagingProvider(channel: MessagingChannel, config: Config): string[] {
  return messagingProvider(channel).missing(config);
}

/**
 * A test-mode deep link to a placeholder bot (Telegram, Viber): a public name this service does
 * not own, so the hosted pages never offer it as a link (a tester's code would go to a
 * stranger's bot); a configured bot gives real links instead.
 */
export const isPlaceholderBotLink = (link: string): boolean =>
  messagingProviders().some(([, p]) => p.flow === "chat" && link.startsWith(p.deepLink(p.placeholder, "", "")));

/**
 * Where users write on a messaging channel: `@bot` for telegram, our E.164 number for whatsapp
 * and sms, the bot's URI for viber; the test placeholders when the provider is not configured
 * (live keys never get that far: missingMessagingProvider refuses them first).
 */
export function messagingAddress(channel: MessagingChannel, config: Config): string {
  return messagingProvider(channel).address(config);
}

/** The link that opens the channel's app at `address` with the payload (a code or token) or the pre-filled text. */
export function messagingDeepLink(channel: MessagingChannel, address: string, payload: string, prefill = payload): string {
  return messagingProvider(channel).deepLink(address, payload, prefill);
}

/**
 * A number a messaging provider attests (a WhatsApp wa_id, a Telegram or Viber contact, Twilio's
 * From), `+` optional: E.164 when it is a *possible* number. The provider has delivered a message
 * from it, so the stricter validity check of tenant input (whose ranges lag new allocations, and
 * which refuses the documented test number +15555550100) is not applied. Undefined when impossible.
 */
export function providerPhone(raw: string): string | undefined {
  const s = raw.trim();
  const parsed = parsePhoneNumberFromString(s.startsWith("+") ? s : `+${s}`);
  return parsed && !parsed.ext && parsed.isPossible() ? parsed.number : undefined;
}
