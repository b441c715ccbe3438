import type { Transporter } from "nodemailer";
import { AppError, settingsOf, type Config } from "@icv/platform";
import { SMTP_CONFIG } from "../channels/shared/smtp.ts";

export interface Mail {
  to: string;
  subject: string;
  text: string;
  html: string;
  /** The sender's display name (a project's business name); the address stays SMTP_FROM's. */
  fromName?: string;
}

/** Sends email; the verification service uses it for codes it must deliver itself (email, domain by email). */
export interface Mailer {
  send(mail: Mail): Promise<void>;
  /** Closes the pooled SMTP connections (service shutdown). */
  close?(): void;
}

/** SMTP through nodemailer (pooled connections), from SMTP_URL / SMTP_FROM; undefined when SMTP is not configured. */
export function smtpMailer(config: Config): Mailer | undefined {
  const smtp = settingsOf(config, SMTP_CONFIG);
  if (!smtp.SMTP_URL) return undefined;
  const url = smtp.SMTP_URL.includes("?") ? smtp.SMTP_URL : `${smtp.SMTP_URL}?pool=true`;
  // nodemailer is loaded with the first mail, not at start
  let transport: Promise<Transporter> | undefined;
  const open = () => (transport ??= import("nodemailer").then((m) => m.default.createTransport(url)));
  const from = smtp.SMTP_FROM ?? `ICV <no-reply@${new URL(config.publicBaseUrl).hostname}>`;
  const address = /<([^>]+)>/.exec(from)?.[1] ?? from;
  return {
    async send({ fromName, ...mail }) {
      try {
        // nodemailer quotes and encodes the display name (a project's business name)
        await (await open()).sendMail({ from: fromName ? { name: fromName, address } : from, ...mail });
      } catch {
        throw new AppError("service_unavailable", "the email could not be sent; try again");
      }
    },
    close: () =>
      void transport?.then(
        (t) => t.close(),
        () => undefined,
      ),
  };
}
