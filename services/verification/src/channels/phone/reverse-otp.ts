/**
 * A phone channel: reverse OTP (the user sends the shown code from the phone; only the provider's
 * inbound message completes it), and where the channel can send to a number, an outbound code.
 * Each phone channel file gives its words and links; this builds the Channel from them.
 */
import { AppError, messagingAddress, missingMessagingProvider, type Config, type MessagingChannel } from "@icv/platform";
import { MIN, type Channel, type CodeChannel } from "../channel.ts";
import { checkCode } from "../shared/code.ts";
import { codeEvidence } from "../shared/evidence.ts";
import { maskPhone } from "../shared/mask.ts";
import { takes } from "../shared/options.ts";
import { parseWith } from "../shared/parse.ts";
import { generateCode } from "../shared/secrets.ts";
import { attestedPhone, normalizePhone } from "./number.ts";
import { deliveryOption, INBOUND_WAY, OUTBOUND_WAY, outboundChallenge } from "./outbound-code.ts";

export interface PhoneChannelSpec {
  channel: MessagingChannel;
  /** The channel's name on the page. */
  name: string;
  /** What the user is asked to do with the code sent to `to` (our number or bot), and the link that pre-fills it. */
  invite(to: string, code: string): { instruction: string; deepLink: string };
  /** The message a user-sent code arrives as (the link's pre-filled text). */
  testBody(code: string): string;
  /** A verification a phone-first session proved over this channel: its instruction. */
  sessionInstruction: string;
  /** Channels that can send a code to a number: the words of that message ("SMS", "WhatsApp message"). */
  outbound?: { by: string; what: string };
}

const TTL_MS = 10 * MIN;

export function phoneChannel(spec: PhoneChannelSpec): Channel {
  const { channel, outbound } = spec;
  return {
    type: "phone",
    channel,
    method: "code",
    ttlMs: TTL_MS,
    options: takes({ delivery: deliveryOption(channel, outbound !== undefined) }),
    evidence: codeEvidence,
    form: {
      name: spec.name,
      deliveries: outbound ? [INBOUND_WAY, OUTBOUND_WAY] : [INBOUND_WAY],
      step: "send_code",
      fields: [{ name: "challenge_code", label: `Code from the ${spec.name} message`, input: "text" }],
    },
    missingProvider: (config: Config) => missingMessagingProvider(channel, config),
    normalize: normalizePhone,
    challenge({ identifier, now, config, options }) {
      const expiresAt = new Date(now.getTime() + TTL_MS);
      const code = generateCode();
      if (options.delivery === "outbound" && outbound) return outboundChallenge(channel as CodeChannel, outbound.by, identifier, code, expiresAt);
      return { code, showCode: true, expiresAt, ...spec.invite(messagingAddress(channel, config), code) };
    },
    complete(v, body, ctx) {
      // reverse OTP: only the provider message from the phone is evidence, never a code typed here
      if (v.delivery !== "outbound") {
        throw new AppError(
          "invalid_state",
          `send the code from the phone: a reverse-OTP verification completes only when its code arrives from its own number over ${v.channel}`,
        );
      }
      return checkCode(v, parseWith(codeEvidence, body), ctx, normalizePhone);
    },
    mask: maskPhone,
    ...(outbound && { sends: { code: (delivery) => delivery === "outbound", notice: (sendTo) => ({ to: maskPhone(sendTo), what: outbound.what }) } }),
    testMessage: (code, config) => ({ to: messagingAddress(channel, config), body: spec.testBody(code) }),
    phone: { attestedCanonical: attestedPhone, sessionInstruction: spec.sessionInstruction },
  };
}
