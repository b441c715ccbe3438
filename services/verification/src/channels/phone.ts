/**
 * Phones: reverse OTP (the user sends the shown code from the phone over WhatsApp, Telegram or
 * SMS; only the provider's inbound message completes it) or an outbound code (we send it by SMS
 * or WhatsApp and the user enters it).
 */
import { parsePhoneNumberFromString } from "libphonenumber-js";
import {
  CHANNELS_BY_TYPE,
  AppError,
  messagingAddress,
  messagingDeepLink,
  missingMessagingProvider,
  providerPhone,
  type Config,
  type MessagingChannel,
} from "@icv/platform";
import { generateCode } from "../challenge.ts";
import { MIN, invalid, same, type Channel, type CodeChannel, type PhoneDelivery } from "./channel.ts";
import { checkCode } from "./shared/code.ts";
import { maskPhone } from "./shared/mask.ts";

/** The phone channels a code can be sent over (Twilio Messages, WhatsApp template); Telegram cannot message a number first. */
export const OUTBOUND_PHONE_CHANNELS: readonly string[] = ["sms", "whatsapp"];

export const phone: Channel = {
  type: "phone",
  channels: CHANNELS_BY_TYPE.phone,
  ttlMs: 10 * MIN,
  method: () => "code",
  missingProvider: (channel: string, config: Config) => missingMessagingProvider(channel as MessagingChannel, config),
  normalize: (_channel, input) => same(normalizePhone(input)),
  delivery: phoneDelivery,
  challenge({ channel, identifier, now, config, delivery }) {
    const expiresAt = new Date(now.getTime() + phone.ttlMs);
    const code = generateCode();
    if (delivery === "outbound") {
      const by = channel === "whatsapp" ? "WhatsApp" : "SMS";
      const instruction = `We sent a 6-character code by ${by} to this number. Enter it to confirm.`;
      return {
        code,
        showCode: false,
        sendTo: identifier,
        sendOver: channel as CodeChannel,
        purpose: "your phone number",
        expiresAt,
        instruction,
      };
    }
    const to = messagingAddress(channel as MessagingChannel, config);
    if (channel === "whatsapp") {
      return {
        code,
        showCode: true,
        expiresAt,
        instruction: `Send the code ${code} from your WhatsApp account to ${to}.`,
        deepLink: `https://wa.me/${to.slice(1)}?text=${encodeURIComponent(code)}`,
      };
    }
    if (channel === "telegram") {
      return {
        code,
        showCode: true,
        expiresAt,
        instruction: `Open ${to} in Telegram, press Start and share your phone number (or send the code ${code}).`,
        deepLink: `https://t.me/${to.slice(1)}?start=${code}`,
      };
    }
    if (channel === "viber") {
      return {
        code,
        showCode: true,
        expiresAt,
        instruction: `Open the link to chat with ${to} in Viber and share your phone number with the button the bot shows.`,
        deepLink: messagingDeepLink("viber", to, code),
      };
    }
    return {
      code,
      showCode: true,
      expiresAt,
      instruction: `Text the code ${code} to ${to} from this phone.`,
      deepLink: `sms:${to}?body=${code}`,
    };
  },
  complete(v, e, ctx) {
    // reverse OTP: only the provider message from the phone is evidence, never a code typed here
    if (v.delivery !== "outbound") {
      throw new AppError(
        "invalid_state",
        `send the code from the phone: a reverse-OTP verification completes only when its code arrives from its own number over ${v.channel}`,
      );
    }
    return checkCode(v, e, ctx, phone.normalize);
  },
  expectedMessage(channel, code, config) {
    // telegram's t.me/<bot>?start=<code> link makes the app send "/start <code>"; wa.me and sms: links pre-fill the code
    return { to: messagingAddress(channel as MessagingChannel, config), body: channel === "telegram" ? `/start ${code}` : code };
  },
  mask: maskPhone,
  sendsCode: (_channel, delivery) => delivery === "outbound",
  sentNotice: (channel, sendTo) => ({ to: maskPhone(sendTo), what: channel === "whatsapp" ? "WhatsApp message" : "SMS" }),
  showsCode: (_channel, delivery) => delivery !== "outbound",
  // the separators a human writes, then what a provider would accept (a possible number)
  attestedCanonical: (raw) => providerPhone(raw.replace(/[\s().\-/]/g, "")),
  sessionInstruction: (channel) =>
    channel === "telegram"
      ? "Confirmed by a message from this number to our Telegram bot."
      : channel === "whatsapp"
        ? "Confirmed by a message from this number to our WhatsApp number."
        : channel === "sms"
          ? "Confirmed by a text message from this number to our SMS number."
          : channel === "viber"
            ? "Confirmed by this number's contact, shared with our Viber bot."
            : undefined,
};

/** The create body's `delivery`, checked: outbound only where a code can be sent. */
function phoneDelivery(channel: string, delivery: string | undefined): PhoneDelivery {
  if (delivery === undefined || delivery === "inbound") return "inbound";
  if (delivery !== "outbound")
    throw new AppError("validation_error", "delivery must be inbound or outbound", {
      details: [{ field: "delivery", message: "inbound or outbound", code: "invalid_enum_value" }],
    });
  if (!OUTBOUND_PHONE_CHANNELS.includes(channel)) {
    throw new AppError(
      "validation_error",
      `delivery outbound needs channel sms or whatsapp (${channel} cannot send a code to a number); use delivery inbound`,
      {
        details: [{ field: "delivery", message: "not on this channel", code: "invalid" }],
      },
    );
  }
  return "outbound";
}

// What a human writes around the digits of an international number. No letters (vanity numbers),
// no extensions, no `tel:` URIs: libphonenumber would otherwise quietly drop such text.
const PHONE_SHAPE = /^\+[0-9][0-9\s().\-/]*$/;

function normalizePhone(input: string): string {
  const s = input.startsWith("00") ? `+${input.slice(2)}` : input;
  if (!s.startsWith("+")) invalid("phone number must be in international format, starting with + or 00 and the country code");
  if (!PHONE_SHAPE.test(s)) invalid("phone number may contain only digits, spaces and the separators ( ) - . /");
  const parsed = parsePhoneNumberFromString(s);
  if (!parsed || parsed.ext || !parsed.isValid()) invalid("phone number is not a valid international number");
  return parsed.number;
}
