import type { Transporter } from "nodemailer";
import { AppError, type Config } from "@icv/platform";

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
  if (!config.SMTP_URL) return undefined;
  const url = config.SMTP_URL.includes("?") ? config.SMTP_URL : `${config.SMTP_URL}?pool=true`;
  // nodemailer is loaded with the first mail, not at start
  let transport: Promise<Transporter> | undefined;
  const open = () => (transport ??= import("nodemailer").then((m) => m.default.createTransport(url)));
  const from = config.SMTP_FROM ?? `ICV <no-reply@${new URL(config.publicBaseUrl).hostname}>`;
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

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The message carrying a verification code (texts in one place so they can be translated).
 * A resent code says that the codes sent before no longer work.
 */
export function codeMail(to: string, code: string, minutes: number, purpose: string, opts: { resent?: boolean } = {}): Mail {
  const replaced = opts.resent ? " This code replaces any code we sent you before; earlier codes no longer work." : "";
  const text = `Your verification code is ${code}\n\nEnter it to confirm ${purpose}. It expires in ${minutes} minutes.${replaced}\nIf you did not ask for this, you can ignore this email.\n`;
  const html = `<!doctype html><html><body style="font-family:system-ui,sans-serif;color:#1a1a1a">
<p>Your verification code is</p><p style="font-size:28px;font-weight:700;letter-spacing:4px">${esc(code)}</p>
<p>Enter it to confirm ${esc(purpose)}. It expires in ${minutes} minutes.${esc(replaced)}</p>
<p style="color:#555">If you did not ask for this, you can ignore this email.</p></body></html>`;
  return { to, subject: `${opts.resent ? "Your new verification code" : "Your verification code"}: ${code}`, text, html };
}
