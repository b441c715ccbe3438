import { eventMessage, type EventRecord } from "@icv/platform";
import type { LogEnv } from "./store/log.ts";

/** What the log records of a proof: its issuance and its revocation (suspensions come and go; they are not logged). */
export const LOGGED_EVENTS = ["proof.issued", "proof.revoked"] as const;

/** An entry's members but logged_at, from a proof event (undefined: not an event the log records). */
export function entryFields(e: EventRecord): { env: LogEnv; fields: Record<string, string> } | undefined {
  const m = eventMessage(e, ...LOGGED_EVENTS);
  if (!m) return undefined;
  const env: LogEnv = (m.env || e.environment) === "test" ? "test" : "live";
  return {
    env,
    fields: {
      kind: e.eventType === "proof.issued" ? "issued" : "revoked",
      proof_id: m.proofId,
      token_sha256: m.tokenSha256,
      env,
      type: m.type,
      channel: m.channel,
      method: m.method,
      // the identifier of a public asset, the salted identifier_hash of a phone or email: the
      // proof service never puts a phone number or an email here
      subject: m.subject,
    },
  };
}

/**
 * The entry's bytes: the UTF-8 JSON of {kind, proof_id, token_sha256, env, type, channel, method,
 * logged_at, subject}, members in this order (DECISIONS.md, Transparency log).
 */
export function entryBytes(f: Record<string, string>, loggedAt: Date): Buffer {
  const { kind, proof_id, token_sha256, env, type, channel, method, subject } = f;
  return Buffer.from(JSON.stringify({ kind, proof_id, token_sha256, env, type, channel, method, logged_at: loggedAt.toISOString(), subject }));
}
