/** Domain by email: a code sent to an admin mailbox at the domain ({email_prefix}@{domain}, default admin). */
import { z } from "zod";
import type { Config } from "@icv/platform";
import { need, type Channel } from "../channel.ts";
import { checkCode } from "../shared/code.ts";
import { codeEvidence } from "../shared/evidence.ts";
import { maskEmail } from "../shared/mask.ts";
import { takes } from "../shared/options.ts";
import { fail, parseWith } from "../shared/parse.ts";
import { generateCode } from "../shared/secrets.ts";
import { SMTP_CONFIG } from "../shared/smtp.ts";
import { checked, DOMAIN_TTL_MS, NOT_AUTO } from "./domain-channel.ts";

/** The mailboxes a domain-by-email code may go to (default admin). */
export const EMAIL_PREFIXES = ["admin", "administrator", "webmaster", "hostmaster", "postmaster"] as const;

const emailPrefix = z
  .any()
  .optional()
  .transform((given: string | undefined, ctx) => {
    if (given !== undefined && !(EMAIL_PREFIXES as readonly string[]).includes(given)) {
      const message = `email_prefix must be one of ${EMAIL_PREFIXES.join(", ")}`;
      fail(ctx, message, [{ field: "email_prefix", message, code: "invalid" }]);
    }
    return given;
  });

export const email: Channel = {
  type: "domain",
  channel: "email",
  method: "code",
  ttlMs: DOMAIN_TTL_MS,
  options: takes({ email_prefix: emailPrefix, dns_provider: NOT_AUTO }),
  evidence: codeEvidence,
  form: { name: "Email", deliveries: [], step: "enter_code", fields: [{ name: "challenge_code", label: "Code from the email", input: "text" }] },
  config: SMTP_CONFIG,
  missingProvider: (config: Config) => need(config, "SMTP_URL"),
  normalize: checked.normalize,
  challenge({ identifier, now, options }) {
    const prefix = options.email_prefix ?? "admin";
    const to = `${prefix}@${identifier}`;
    return {
      code: generateCode(),
      showCode: false,
      sendTo: to,
      sendOver: "email",
      purpose: `control of ${identifier}`,
      expiresAt: new Date(now.getTime() + DOMAIN_TTL_MS),
      instruction: `We sent a 6-character code to ${to}. Enter it to confirm control of ${identifier}.`,
      domainState: { token: null, emailPrefix: prefix },
    };
  },
  complete: (v, body, ctx) => checkCode(v, parseWith(codeEvidence, body), ctx, checked.normalize),
  mask: checked.mask,
  // the code goes to {prefix}@{domain}
  sends: { code: () => true, notice: (sendTo) => ({ to: maskEmail(sendTo), what: "email" }) },
};
