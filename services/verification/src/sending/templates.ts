/**
 * Message templates: `{{variable}}` placeholders, checked when stored and rendered safely for
 * the target (email: every character of the template and of every value HTML-escaped; the other
 * channels: plain text). Rendering is one pass over the template, so a value that holds
 * `{{code}}` stays text. The texts are in one place so they can be translated (a `locale` column
 * can be added beside channel and type): the built-in texts templates replace, and the built-in
 * code messages (mail and phone text) with a project's branding.
 */
import { AppError, TEMPLATE_CHANNELS, TEMPLATE_TYPES, type TemplateChannel, type TemplateType } from "@icv/platform";
import type { ProjectRow } from "../store/projects.ts";
import type { Mail } from "./mailer.ts";

export const TEMPLATE_VARIABLES = ["business_name", "code", "expires_in", "user_identifier", "channel", "support_email"] as const;
export type Variables = Partial<Record<(typeof TEMPLATE_VARIABLES)[number], string>>;

export const MAX_BODY = 2000;
/** Twilio refuses bodies over 1,600 characters; ours adds the one-time-code line (about 60). */
export const MAX_SMS_BODY = 1500;
export const MAX_SUBJECT = 200;
export const MAX_BUTTON = 40;

const PLACEHOLDER = /\{\{\s*([A-Za-z0-9_]*)\s*\}\}/g;

const invalid = (message: string, field: string, code = "invalid") => new AppError("validation_error", message, { details: [{ field, message, code }] });

/** A template's text, checked: only known variables, no stray braces. */
function checkText(text: string, field: string): Set<string> {
  const used = new Set<string>();
  for (const m of text.matchAll(PLACEHOLDER)) {
    if (!(TEMPLATE_VARIABLES as readonly string[]).includes(m[1])) {
      throw invalid(`${field}: unknown variable {{${m[1]}}}; use ${TEMPLATE_VARIABLES.map((v) => `{{${v}}}`).join(", ")}`, field, "unknown_variable");
    }
    used.add(m[1]);
  }
  if (/\{\{|\}\}/.test(text.replace(PLACEHOLDER, ""))) throw invalid(`${field}: a {{ without its }} (or the other way round)`, field, "malformed_placeholder");
  return used;
}

export function checkChannelType(channel: string, type: string): { channel: TemplateChannel; type: TemplateType } {
  if (!(TEMPLATE_CHANNELS as readonly string[]).includes(channel))
    throw invalid(`channel must be one of ${TEMPLATE_CHANNELS.join(", ")}`, "channel", "invalid_enum_value");
  if (!(TEMPLATE_TYPES as readonly string[]).includes(type)) throw invalid(`type must be one of ${TEMPLATE_TYPES.join(", ")}`, "type", "invalid_enum_value");
  return { channel: channel as TemplateChannel, type: type as TemplateType };
}

/** A template as PUT gives it, checked (DECISIONS.md): body ≤ 2,000, known variables, {{code}} in a *_request body, subject for email only. */
export function checkTemplate(channel: TemplateChannel, type: TemplateType, t: { body: string; subject?: string; buttonText?: string }): void {
  if (!t.body.trim()) throw invalid("body must not be empty", "body", "too_small");
  if (t.body.length > MAX_BODY) throw invalid(`body must be at most ${MAX_BODY} characters`, "body", "too_big");
  if (channel === "sms" && t.body.length > MAX_SMS_BODY)
    throw invalid(`an SMS body must be at most ${MAX_SMS_BODY} characters (an SMS carries at most 1,600)`, "body", "too_big");
  const used = checkText(t.body, "body");
  if (type.endsWith("_request") && !used.has("code"))
    throw invalid(`a ${type} template must hold {{code}}: the message carries the code`, "body", "missing_code");
  if (t.subject !== undefined) {
    if (channel !== "email") throw invalid("subject is for email templates only", "subject");
    if (!t.subject.trim() || t.subject.length > MAX_SUBJECT || /[\r\n]/.test(t.subject))
      throw invalid(`subject must be one line of 1 to ${MAX_SUBJECT} characters`, "subject");
    checkText(t.subject, "subject");
  }
  if (t.buttonText !== undefined) {
    if (!t.buttonText.trim() || t.buttonText.length > MAX_BUTTON || /[\r\n]/.test(t.buttonText))
      throw invalid(`button_text must be one line of 1 to ${MAX_BUTTON} characters`, "button_text");
    checkText(t.buttonText, "button_text");
  }
}

export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Fills the placeholders in one pass; an unset variable renders empty. `escapeText` applies to the template's text and the values alike. */
export function fill(text: string, vars: Variables, escapeText: (s: string) => string = (s) => s): string {
  let out = "";
  let last = 0;
  for (const m of text.matchAll(PLACEHOLDER)) {
    out += escapeText(text.slice(last, m.index)) + escapeText(vars[m[1] as keyof Variables] ?? "");
    last = m.index! + m[0].length;
  }
  return out + escapeText(text.slice(last));
}

export interface Rendered {
  subject?: string;
  text: string;
  html?: string;
  buttonText?: string;
}

/** The branding an email's HTML carries (colour checked when stored: #rgb or #rrggbb). */
export interface MailBranding {
  businessName?: string | null;
  primaryColor?: string | null;
  supportEmail?: string | null;
}

/** An email's HTML around an escaped body: the business name as the heading, the colour as its accent. */
export function mailHtml(bodyHtml: string, b: MailBranding): string {
  const color = b.primaryColor && /^#[0-9a-fA-F]{3}([0-9a-fA-F]{3})?$/.test(b.primaryColor) ? b.primaryColor : "#1a1a1a";
  const head = b.businessName ? `<h1 style="font-size:20px;color:${color}">${escapeHtml(b.businessName)}</h1>\n` : "";
  const foot = b.supportEmail ? `\n<p style="color:#555">${escapeHtml(TEXTS.questions)} ${escapeHtml(b.supportEmail)}</p>` : "";
  return `<!doctype html><html><body style="font-family:system-ui,sans-serif;color:#1a1a1a">\n${head}<p>${bodyHtml.replace(/\n/g, "<br>")}</p>${foot}</body></html>`;
}

/** Renders a stored template for its channel: email gets subject, text and escaped HTML; the others plain text. */
export function renderTemplate(
  channel: string,
  t: { body: string; subject?: string | null; button_text?: string | null },
  vars: Variables,
  b: MailBranding,
): Rendered {
  const text = fill(t.body, vars);
  const buttonText = t.button_text ? fill(t.button_text, vars) : undefined;
  if (channel !== "email") return { text, buttonText };
  return {
    subject: fill(t.subject ?? TEXTS.defaultSubject, vars).replace(/[\r\n]+/g, " "),
    text,
    html: mailHtml(fill(t.body, vars, escapeHtml), b),
    buttonText,
  };
}

/** The built-in texts a template replaces (shown by GET when the project has none; the service's own messages use them too). */
export const TEXTS = {
  questions: "Questions? Write to",
  defaultSubject: "{{business_name}} verification code: {{code}}",
  builtIn: {
    verification_request: "Your {{business_name}} verification code is {{code}}. It expires in {{expires_in}}. Do not share it with anyone.",
    verification_success: "Thank you, your {{channel}} is verified. You can go back to the app now.",
    verification_expired: "This code or link has expired. Start again in the app to get a new one.",
    login_request: "Your {{business_name}} login code is {{code}}. It expires in {{expires_in}}. Do not share it with anyone.",
    login_success: "Thank you, confirmed. You can go back to the app now.",
    "2fa_request": "Your {{business_name}} sign-in code is {{code}}. It expires in {{expires_in}}. Do not share it with anyone.",
    "2fa_success": "Thank you, confirmed. You can go back to the app now.",
  } satisfies Record<TemplateType, string>,
};

/** Sample values for a preview. */
export const SAMPLE: Variables = { code: "A1B2C3", expires_in: "10 minutes", user_identifier: "j***e@example.com" };

// ---- the built-in code messages (create and resend), with a project's branding ----------------

/** A code's mail: the project's rendered template, else the built-in text with the project's branding. */
export function codeMailOf(t: { to: string; code: string; minutes: number; purpose: string }, w: CodeWords, resent?: boolean): Mail {
  const r = w.rendered;
  if (r) return { to: t.to, subject: r.subject!, text: r.text, html: r.html!, fromName: w.project?.business_name ?? undefined };
  return brandMail(codeMail(t.to, t.code, t.minutes, t.purpose, { resent }), w.project);
}

/**
 * A phone code's text: an SMS is the project's template (or the branded built-in text); a
 * WhatsApp code goes as the approved authentication template, whose words are Meta's, so its
 * text (the test-mode record) is the built-in one.
 */
export function codeTextOf(channel: string, t: { code: string; minutes: number }, w: CodeWords, host: string, resent?: boolean): string {
  const builtIn = phoneCodeText(t.code, t.minutes, host, resent);
  return channel === "sms" ? phoneWords(w, builtIn, t.code, host) : builtIn;
}

/**
 * The text of a phone code (the SMS body; the test-mode record of a WhatsApp template). The last
 * line is the origin-bound one-time-code format (WebOTP, iOS/Android autofill) for our host.
 */
function phoneCodeText(code: string, minutes: number, host: string, resent = false): string {
  const replaced = resent ? " Earlier codes no longer work." : "";
  return `Your verification code is ${code}. It expires in ${minutes} minutes.${replaced} Do not share it with anyone.\n\n@${host} #${code}`;
}

/** A project's words for a code (messages.ts): the project, and its template rendered (absent: the built-in text). */
export interface CodeWords {
  project?: ProjectRow;
  rendered?: Rendered;
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
