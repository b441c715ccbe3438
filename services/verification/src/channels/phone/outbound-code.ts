/** The outbound-code step of a phone channel: we send a code by SMS or WhatsApp and the user enters it. */
import { z } from "zod";
import type { ChallengeSpec, CodeChannel, PhoneDelivery } from "../channel.ts";
import { fail } from "../shared/parse.ts";

/**
 * The create body's `delivery`: inbound (the default) on every phone channel, outbound only on
 * a channel that can send a code to a number.
 */
export const deliveryOption = (channel: string, outbound: boolean) =>
  z
    .any()
    .optional()
    .transform((delivery: unknown, ctx): PhoneDelivery => {
      if (delivery === undefined || delivery === "inbound") return "inbound";
      if (delivery !== "outbound") {
        fail(ctx, "delivery must be inbound or outbound", [{ field: "delivery", message: "inbound or outbound", code: "invalid_enum_value" }]);
        return "inbound";
      }
      if (!outbound) {
        fail(ctx, `delivery outbound needs channel sms or whatsapp (${channel} cannot send a code to a number); use delivery inbound`, [
          { field: "delivery", message: "not on this channel", code: "invalid" },
        ]);
      }
      return "outbound";
    });

/** The start form's two ways, in the words every phone channel shows alike. */
export const INBOUND_WAY = { way: "inbound", label: "Send a code from my phone" } as const;
export const OUTBOUND_WAY = { way: "outbound", label: "Get a code by SMS or WhatsApp" } as const;

/** The challenge of an outbound code: sent by `by` ("SMS", "WhatsApp") over `channel` to the number. */
export function outboundChallenge(channel: CodeChannel, by: string, identifier: string, code: string, expiresAt: Date): ChallengeSpec {
  return {
    code,
    showCode: false,
    sendTo: identifier,
    sendOver: channel,
    purpose: "your phone number",
    expiresAt,
    instruction: `We sent a 6-character code by ${by} to this number. Enter it to confirm.`,
  };
}
