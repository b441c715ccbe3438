/** The INSERT of a new verification (VerificationStore.insert): sealed personal data, its creation event, its test message. */
import { writeWithEvents, type PersonalData, type Queryable } from "@icv/platform";
import { statusEvents } from "./events.ts";
import type { NewVerification, TestMessageRow, VerificationRow } from "./rows.ts";
import { sealVerification } from "./sealing.ts";
import { testMessageWith } from "./test-messages.ts";

const S = "verification";

/**
 * Stores a new verification (pending) with its creation event; a test-mode message goes in the
 * same statement. Its identifier, instruction, challenge message and client_metadata are sealed.
 * Answers the row as written, made here (the statement returns its id only: reading the wide row
 * back and opening its sealed columns again cost a tenth of a create, issue 33).
 */
export async function insertVerification(q: Queryable, pd: PersonalData, v: NewVerification, testMessage?: TestMessageRow): Promise<VerificationRow> {
  const row: VerificationRow = {
    ...v,
    status: "pending",
    attempts: 0,
    updated_at: v.created_at,
    proof_token: null,
    proof_expires_at: null,
    verified_at: null,
    revoked_at: null,
    revoked_reason: null,
    resend_count: 0,
    code_sent_at: null,
    method: null,
    reused_from: null,
    callback_url: v.callback_url ?? null,
    project_id: v.project_id ?? null,
    message_type: v.message_type ?? null,
    proof_format: v.proof_format ?? "jwt",
    holder_key: v.holder_key ?? null,
    proof_identifier_salt: null,
    proof_sd_jwt_vc: null,
    suspended_at: null,
    suspended_reason: null,
  };
  const sealed = sealVerification(pd, v);
  await writeWithEvents(
    q,
    S,
    `INSERT INTO ${S}.verifications (id, tenant_id, environment, type, channel, identifier, identifier_canonical, status, code_hmac,
       challenge_expires_at, instruction, deep_link, challenge_message, max_attempts, client_metadata, external_user_id, proof_expires_in,
       created_at, updated_at, code_lookup, origin, delivery, callback_url, project_id, message_type, proof_format, holder_key, identifier_index, key_version)
     VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27)
     RETURNING id`,
    [
      v.id,
      v.tenant_id,
      v.environment,
      v.type,
      v.channel,
      sealed.identifier,
      sealed.identifier_canonical,
      v.code_hmac,
      v.challenge_expires_at,
      sealed.instruction,
      v.deep_link,
      sealed.challenge_message,
      v.max_attempts,
      sealed.client_metadata,
      v.external_user_id,
      v.proof_expires_in,
      v.created_at,
      v.code_lookup,
      v.origin,
      v.delivery,
      row.callback_url,
      v.project_id ?? null,
      v.message_type ?? null,
      row.proof_format,
      row.holder_key ? JSON.stringify(row.holder_key) : null,
      sealed.identifier_index,
      sealed.key_version,
    ],
    statusEvents(pd, row, null, v.created_at),
    v.created_at,
    testMessage && testMessageWith(pd, testMessage),
  );
  return row;
}
