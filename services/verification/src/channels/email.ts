/** Email: a code sent to the address. */
import { CHANNELS_BY_TYPE } from "@icv/platform";
import type { Config } from "@icv/platform";
import { generateCode } from "./shared/secrets.ts";
import { MIN, need, same, type Channel } from "./channel.ts";
import { checkCode } from "./shared/code.ts";
import { maskEmail } from "./shared/mask.ts";
import { normalizeEmail } from "./shared/names.ts";

export const email: Channel = {
  type: "email",
  channels: CHANNELS_BY_TYPE.email,
  ttlMs: 30 * MIN,
  method: () => "code",
  missingProvider: (_channel: string, config: Config) => need(config, "SMTP_URL"),
  normalize: (_channel, input) => same(normalizeEmail(input)),
  challenge({ identifier, now }) {
    const expiresAt = new Date(now.getTime() + email.ttlMs);
    return {
      code: generateCode(),
      showCode: false,
      sendTo: identifier,
      sendOver: "email",
      purpose: "your email address",
      expiresAt,
      instruction: `We sent a 6-character code to your email address. Enter it to confirm.`,
    };
  },
  complete: (v, e, ctx) => checkCode(v, e, ctx, email.normalize),
  mask: maskEmail,
  sendsCode: () => true,
  sentNotice: (_channel, sendTo) => ({ to: maskEmail(sendTo), what: "email" }),
};
