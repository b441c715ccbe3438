/** The SMTP server the email channels' codes go out through (email, domain by email); sending/mailer.ts reads it. */
import { z } from "zod";
import type { SettingsOf } from "@icv/platform";

export const SMTP_CONFIG = {
  // unset: email channels are unavailable for live keys
  SMTP_URL: z
    .string()
    .regex(/^smtps?:\/\//, "must be an smtp:// or smtps:// URL")
    .optional(),
  // the sender (default ICV <no-reply@{PUBLIC_BASE_URL's host}>)
  SMTP_FROM: z.string().optional(),
};

export type SmtpSettings = SettingsOf<typeof SMTP_CONFIG>;
