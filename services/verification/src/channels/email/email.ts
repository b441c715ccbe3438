/** Email: a code sent to the address. */
import type { Config } from "@icv/platform";
import { checkRaw, MIN, need, same, type Channel } from "../channel.ts";
import { checkCode } from "../shared/code.ts";
import { codeEvidence } from "../shared/evidence.ts";
import { maskEmail } from "../shared/mask.ts";
import { normalizeEmail } from "../shared/names.ts";
import { takes } from "../shared/options.ts";
import { parseWith } from "../shared/parse.ts";
import { generateCode } from "../shared/secrets.ts";
import { SMTP_CONFIG } from "../shared/smtp.ts";

const TTL_MS = 30 * MIN;
const normalize = (raw: string) => same(normalizeEmail(checkRaw(raw)));

export const email: Channel = {
  type: "email",
  channel: "email",
  method: "code",
  ttlMs: TTL_MS,
  options: takes(),
  evidence: codeEvidence,
  form: { name: "Email", deliveries: [], step: "enter_code", fields: [{ name: "challenge_code", label: "Code from the email", input: "text" }] },
  config: SMTP_CONFIG,
  missingProvider: (config: Config) => need(config, "SMTP_URL"),
  normalize,
  challenge: ({ identifier, now }) => ({
    code: generateCode(),
    showCode: false,
    sendTo: identifier,
    sendOver: "email",
    purpose: "your email address",
    expiresAt: new Date(now.getTime() + TTL_MS),
    instruction: `We sent a 6-character code to your email address. Enter it to confirm.`,
  }),
  complete: (v, body, ctx) => checkCode(v, parseWith(codeEvidence, body), ctx, normalize),
  mask: maskEmail,
  sends: { code: () => true, notice: (sendTo) => ({ to: maskEmail(sendTo), what: "email" }) },
};
