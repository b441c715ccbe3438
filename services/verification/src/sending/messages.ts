/**
 * A code message, composed: the project's active template for the channel and type when it has
 * one (rendered for the target: escaped HTML for email, plain text else), otherwise the built-in
 * text with the project's branding around it (business name, support address). delivery.ts sends
 * what this file composes.
 */
import type { Scope } from "@icv/platform";
import type { ChallengeSpec, CodeChannel } from "../channels/channel.ts";
import type { ProjectStore } from "../store/projects.ts";
import type { Mail } from "./mailer.ts";
import { brandVariables } from "./project-words.ts";
import { codeMailOf, codeTextOf, renderTemplate, type CodeWords } from "./templates.ts";

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
  if (t.channel === "email") return { ...base, channel: t.channel, mail: codeMailOf(t, words, opts.resent) };
  return { ...base, channel: t.channel, text: codeTextOf(t.channel, t, words, host, opts.resent) };
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
