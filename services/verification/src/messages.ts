/**
 * The words of a code message: the project's active template for the channel and type when it
 * has one (rendered for the target: escaped HTML for email, plain text else), otherwise the
 * built-in text with the project's branding around it (business name, support address).
 */
import { maskEmail, maskPhone } from "./channels/shared/mask.ts";
import { escapeHtml, renderTemplate, TEXTS, brandVariables, type Rendered } from "./projects/index.ts";
import type { Mail } from "./mailer.ts";
import type { ProjectRow, ProjectStore } from "./store/index.ts";
import type { Scope } from "@icv/platform";

export interface CodeWords {
  project?: ProjectRow;
  /** The project's template, rendered; absent: the built-in text. */
  rendered?: Rendered;
}

/** One query: the verification's project (or the default) and its active template; rendered with the message's values. */
export async function codeWords(
  projects: ProjectStore | undefined,
  scope: Scope,
  v: { type: string; project_id?: string | null; message_type?: string | null },
  m: { channel: string; to: string; code: string; minutes: number },
): Promise<CodeWords> {
  const found = await projects?.forMessage(scope, v.project_id ?? null, m.channel, v.message_type ?? "verification_request");
  if (!found) return {};
  const p = found.project;
  if (!found.template) return { project: p };
  const vars = {
    ...brandVariables(p),
    code: m.code,
    expires_in: `${m.minutes} minutes`,
    user_identifier: v.type === "phone" ? maskPhone(m.to) : maskEmail(m.to),
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
export function brandMail(mail: Mail, p: ProjectRow | undefined): Mail {
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
export function phoneWords(w: CodeWords, builtIn: string, code: string, host: string): string {
  if (w.rendered) return `${w.rendered.text}\n\n@${host} #${code}`;
  return w.project?.business_name ? `${w.project.business_name}: ${builtIn}` : builtIn;
}
