/**
 * A code message, composed: the project's active template for the channel and type when it has
 * one (rendered for the target: escaped HTML for email, plain text else), otherwise the built-in
 * text with the project's branding around it (business name, support address). delivery.ts sends
 * what this file composes.
 */
import type { Scope } from "@icv/platform";
import type { ChallengeSpec, CodeChannel } from "../channels/index.ts";
import type { ProjectRow, ProjectStore } from "../store/projects.ts";
import type { Mail } from "./mailer.ts";
import { brandVariables } from "./project-words.ts";
import { escapeHtml, renderTemplate, TEXTS, type Rendered } from "./templates.ts";

/** Where a verification's code goes (the challenge's sendTo and sendOver), for how long, and what it confirms. */
interface CodeTarget {
  channel: CodeChannel;
  /** An email address, or an E.164 number. */
  to: string;
  /** `to` masked as a message may show it (the template variable user_identifier). */
  maskedTo: string;
  code: string;
  /** How long the code works, in minutes. */
  minutes: number;
  /** Email only: what the code confirms ("your email address", "control of example.com"). */
  purpose: string;
}

/** The target of a challenge the service sends: its ttl and the masked address come from the channel. */
const codeTarget = (ch: ChallengeSpec, ttlMs: number, maskedTo: string): CodeTarget => ({
  channel: ch.sendOver!,
  to: ch.sendTo!,
  maskedTo,
  code: ch.code!,
  minutes: Math.round(ttlMs / 60_000),
  purpose: ch.purpose ?? "",
});

/**
 * A code ready to go: where and over what, and its words. An email carries `mail`; a phone code
 * carries `text` (an SMS's body; a WhatsApp code goes as the approved authentication template,
 * whose words are Meta's, so its `text` is the built-in one, kept as its test-mode record).
 */
export type ComposedCode = { verificationId: string; to: string; code: string } & (
  | { channel: "email"; mail: Mail }
  | { channel: Exclude<CodeChannel, "email">; text: string }
);

/**
 * Composes the code message of verification `v` for challenge `ch` (its sendTo, sendOver, code
 * and purpose) with the words of its project (one query: the project, or the default, and its
 * active template). Of the channel it takes plain facts: the code's lifetime and the address
 * masked. `publicBaseUrl` gives the SMS's origin-bound one-time-code line its host; `resent`: the
 * message says earlier codes no longer work.
 */
export async function composeCode(
  projects: ProjectStore | undefined,
  scope: Scope,
  v: { id: string; project_id?: string | null; message_type?: string | null },
  ch: ChallengeSpec,
  channel: { ttlMs: number; maskedTo: string },
  opts: { publicBaseUrl: string; resent?: boolean },
): Promise<ComposedCode> {
  const t = codeTarget(ch, channel.ttlMs, channel.maskedTo);
  const host = new URL(opts.publicBaseUrl).hostname;
  const words = await codeWords(projects, scope, v, t);
  const base = { verificationId: v.id, to: t.to, code: t.code };
  if (t.channel === "email") return { ...base, channel: t.channel, mail: mailOf(t, words, opts.resent) };
  const builtIn = phoneCodeText(t.code, t.minutes, host, opts.resent);
  return { ...base, channel: t.channel, text: t.channel === "sms" ? phoneWords(words, builtIn, t.code, host) : builtIn };
}

/** The mail of a code: the project's rendered template, else the built-in text with its branding. */
function mailOf(t: CodeTarget, w: CodeWords, resent?: boolean): Mail {
  const r = w.rendered;
  if (r) return { to: t.to, subject: r.subject!, text: r.text, html: r.html!, fromName: w.project?.business_name ?? undefined };
  return brandMail(codeMail(t.to, t.code, t.minutes, t.purpose, { resent }), w.project);
}

/**
 * The text of a phone code (the SMS body; the test-mode record of a WhatsApp template). The last
 * line is the origin-bound one-time-code format (WebOTP, iOS/Android autofill) for our host.
 */
export function phoneCodeText(code: string, minutes: number, host: string, resent = false): string {
  const replaced = resent ? " Earlier codes no longer work." : "";
  return `Your verification code is ${code}. It expires in ${minutes} minutes.${replaced} Do not share it with anyone.\n\n@${host} #${code}`;
}

interface CodeWords {
  project?: ProjectRow;
  /** The project's template, rendered; absent: the built-in text. */
  rendered?: Rendered;
}

/** One query: the verification's project (or the default) and its active template; rendered with the message's values. */
async function codeWords(
  projects: ProjectStore | undefined,
  scope: Scope,
  v: { project_id?: string | null; message_type?: string | null },
  m: CodeTarget,
): Promise<CodeWords> {
  const found = await projects?.forMessage(scope, v.project_id ?? null, m.channel, v.message_type ?? "verification_request");
  if (!found) return {};
  const p = found.project;
  if (!found.template) return { project: p };
  const vars = {
    ...brandVariables(p),
    code: m.code,
    expires_in: `${m.minutes} minutes`,
    user_identifier: m.maskedTo,
    channel: m.channel,
  };
  return {
    project: p,
    rendered: renderTemplate(m.channel, found.template, vars, {
      businessName: p.business_name,
      primaryColor: p.primary_color,
      supportEmail: p.support_email,
    }),
  };
}

/** A built-in code mail with the project's branding: its business name as the sender's name and heading, its support address at the end. */
function brandMail(mail: Mail, p: ProjectRow | undefined): Mail {
  if (!p || (!p.business_name && !p.support_email)) return mail;
  const name = p.business_name ?? undefined;
  const foot = p.support_email ? `${TEXTS.questions} ${p.support_email}\n` : "";
  const head = name ? `${name}\n\n` : "";
  const htmlHead = name ? `<h1 style="font-size:20px${p.primary_color ? `;color:${p.primary_color}` : ""}">${escapeHtml(name)}</h1>\n` : "";
  const htmlFoot = p.support_email ? `<p style="color:#555">${escapeHtml(`${TEXTS.questions} ${p.support_email}`)}</p>` : "";
  return {
    ...mail,
    fromName: name,
    subject: name ? `${name}: ${mail.subject}` : mail.subject,
    text: `${head}${mail.text}${foot}`,
    html: mail.html.replace(/<body([^>]*)>/, `<body$1>\n${htmlHead}`).replace("</body>", `${htmlFoot}</body>`),
  };
}

/** The text of a phone code: the template's, else the built-in one with the business name in front. */
function phoneWords(w: CodeWords, builtIn: string, code: string, host: string): string {
  if (w.rendered) return `${w.rendered.text}\n\n@${host} #${code}`;
  return w.project?.business_name ? `${w.project.business_name}: ${builtIn}` : builtIn;
}

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The message carrying a verification code (texts in one place so they can be translated).
 * A resent code says that the codes sent before no longer work.
 */
function codeMail(to: string, code: string, minutes: number, purpose: string, opts: { resent?: boolean } = {}): Mail {
  const replaced = opts.resent ? " This code replaces any code we sent you before; earlier codes no longer work." : "";
  const text = `Your verification code is ${code}\n\nEnter it to confirm ${purpose}. It expires in ${minutes} minutes.${replaced}\nIf you did not ask for this, you can ignore this email.\n`;
  const html = `<!doctype html><html><body style="font-family:system-ui,sans-serif;color:#1a1a1a">
<p>Your verification code is</p><p style="font-size:28px;font-weight:700;letter-spacing:4px">${esc(code)}</p>
<p>Enter it to confirm ${esc(purpose)}. It expires in ${minutes} minutes.${esc(replaced)}</p>
<p style="color:#555">If you did not ask for this, you can ignore this email.</p></body></html>`;
  return { to, subject: `${opts.resent ? "Your new verification code" : "Your verification code"}: ${code}`, text, html };
}
