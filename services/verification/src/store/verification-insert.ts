/** The INSERT of a new verification (VerificationStore.insert): sealed personal data, its creation event, its test message; one row or a batch's rows in one statement. */
import { latest, textColumns, writeRowsWithEvents, writeWithEvents, type OutboxEvent, type PersonalData, type Queryable } from "@icv/platform";
import { statusEvents } from "./events.ts";
import type { NewVerification, TestMessageRow, VerificationRow } from "./rows.ts";
import { sealVerification } from "./sealing.ts";
import { testMessagesWith, testMessageWith } from "./test-messages.ts";

const S = "verification";

/** The columns written from parameters, in the order of `prepared`'s values, with their types (status is 'pending', updated_at the creation time). */
const COLUMNS = [
  ["id", "text"],
  ["tenant_id", "text"],
  ["environment", "text"],
  ["type", "text"],
  ["channel", "text"],
  ["identifier", "text"],
  ["identifier_canonical", "text"],
  ["code_hmac", "text"],
  ["challenge_expires_at", "timestamptz"],
  ["instruction", "text"],
  ["deep_link", "text"],
  ["challenge_message", "text"],
  ["max_attempts", "integer"],
  ["client_metadata", "jsonb"],
  ["external_user_id", "text"],
  ["proof_expires_in", "integer"],
  ["created_at", "timestamptz"],
  ["code_lookup", "text"],
  ["origin", "text"],
  ["delivery", "text"],
  ["callback_url", "text"],
  ["project_id", "text"],
  ["message_type", "text"],
  ["proof_format", "text"],
  ["holder_key", "jsonb"],
  ["identifier_index", "text"],
  ["key_version", "integer"],
] as const;
const NAMES = `${COLUMNS.map(([c]) => c).join(", ")}, status, updated_at`;

/** A new verification as written: the row as it stands after the insert, the statement's values (its personal data sealed) and its creation event. */
interface Prepared {
  row: VerificationRow;
  values: unknown[];
  events: OutboxEvent[];
  testMessage?: TestMessageRow;
}

function prepared(pd: PersonalData, v: NewVerification, testMessage?: TestMessageRow): Prepared {
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
  const values = [
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
    row.project_id,
    row.message_type,
    row.proof_format,
    row.holder_key ? JSON.stringify(row.holder_key) : null,
    sealed.identifier_index,
    sealed.key_version,
  ];
  return { row, values, events: statusEvents(pd, row, null, v.created_at), testMessage };
}

/**
 * Stores a new verification (pending) with its creation event; a test-mode message goes in the
 * same statement. Its identifier, instruction, challenge message and client_metadata are sealed.
 * Answers the row as written, made here (the statement returns its id only: reading the wide row
 * back and opening its sealed columns again cost a tenth of a create, issue 33).
 */
export async function insertVerification(q: Queryable, pd: PersonalData, v: NewVerification, testMessage?: TestMessageRow): Promise<VerificationRow> {
  const p = prepared(pd, v, testMessage);
  await writeWithEvents(
    q,
    S,
    `INSERT INTO ${S}.verifications (${NAMES}) VALUES (${COLUMNS.map((_, i) => `$${i + 1}`).join(", ")}, 'pending', $17) RETURNING id`,
    p.values,
    p.events,
    v.created_at,
    testMessage && testMessageWith(pd, testMessage),
  );
  return p.row;
}

/** insertVerification for new verifications of distinct ids in one statement (the values as text arrays, cast to each column's type). */
export async function insertVerifications(
  q: Queryable,
  pd: PersonalData,
  items: { v: NewVerification; testMessage?: TestMessageRow }[],
): Promise<VerificationRow[]> {
  const ps = items.map((i) => prepared(pd, i.v, i.testMessage));
  const messages = ps.flatMap((p) => (p.testMessage ? [p.testMessage] : []));
  await writeRowsWithEvents(
    q,
    S,
    `INSERT INTO ${S}.verifications (${NAMES})
       SELECT ${COLUMNS.map(([c, type]) => `${c}::${type}`).join(", ")}, 'pending', created_at::timestamptz
         FROM unnest(${COLUMNS.map((_, i) => `$${i + 1}::text[]`).join(", ")}) AS u(${COLUMNS.map(([c]) => c).join(", ")})
       RETURNING id`,
    textColumns(ps.map((p) => p.values)),
    ps.flatMap((p) => p.events),
    latest(ps.map((p) => p.row.created_at)),
    messages.length ? testMessagesWith(pd, messages) : undefined,
  );
  return ps.map((p) => p.row);
}
