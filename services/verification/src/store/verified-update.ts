/** The UPDATE that completes a pending verification with its proof and events (VerificationStore.markVerified), one row or a batch's rows in one statement. */
import { latest, textColumns, writeRowsWithEvents, writeWithEvents, type OutboxEvent, type Queryable } from "@icv/platform";
import type { VerificationRow } from "./rows.ts";

const S = "verification";

/** The columns of a pending verification that change without a status change (attempts, resends, OAuth's state). */
const PENDING_CHANGES = ["attempts", "code_hmac", "challenge_expires_at", "resend_count", "code_sent_at", "deep_link"] as const;

/** Those columns as the completing statement found them. */
export type PendingChanges = Pick<VerificationRow, (typeof PENDING_CHANGES)[number]>;

/** One completion: the row as it will stand (`after`, verified with its proof), when, and its events. */
export interface Completion {
  after: VerificationRow;
  at: Date;
  events: OutboxEvent[];
}

/** The statement's values of a completion, in the order of SET_COLUMNS' parameters. */
const values = ({ after: v, at }: Completion): unknown[] => [
  v.id,
  v.tenant_id,
  v.environment,
  at,
  v.proof_token,
  v.proof_expires_at,
  v.method,
  v.proof_identifier_salt,
  v.proof_sd_jwt_vc,
  v.verified_at,
];

/** pending → verified; undefined when the row was no longer pending (nothing written then). */
export async function writeVerified(q: Queryable, c: Completion): Promise<PendingChanges | undefined> {
  const r = await writeWithEvents<PendingChanges>(
    q,
    S,
    `UPDATE ${S}.verifications SET status = 'verified', verified_at = $10, proof_token = $5, proof_expires_at = $6, method = $7, updated_at = $4,
            proof_identifier_salt = $8, proof_sd_jwt_vc = $9
      WHERE id = $1 AND tenant_id = $2 AND environment = $3 AND status = 'pending' RETURNING ${PENDING_CHANGES.join(", ")}`,
    values(c),
    c.events,
    c.at,
  );
  return r.rows[0];
}

/**
 * writeVerified for completions of distinct verifications in one statement (the values as text
 * arrays, cast to each column's type); per completion, undefined when its row was no longer pending.
 */
export async function writeVerifiedMany(q: Queryable, cs: Completion[]): Promise<(PendingChanges | undefined)[]> {
  const r = await writeRowsWithEvents<PendingChanges & { id: string }>(
    q,
    S,
    `UPDATE ${S}.verifications v SET status = 'verified', verified_at = u.verified_at::timestamptz, proof_token = u.token,
            proof_expires_at = u.expires_at::timestamptz, method = u.method, updated_at = u.at::timestamptz,
            proof_identifier_salt = u.salt, proof_sd_jwt_vc = u.vc
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[])
            AS u(id, tenant_id, environment, at, token, expires_at, method, salt, vc, verified_at)
      WHERE v.id = u.id AND v.tenant_id = u.tenant_id AND v.environment = u.environment AND v.status = 'pending'
      RETURNING v.id, ${PENDING_CHANGES.map((c) => `v.${c}`).join(", ")}`,
    textColumns(cs.map(values)),
    cs.flatMap((c) => c.events),
    latest(cs.map((c) => c.at)),
  );
  const written = new Map(r.rows.map(({ id, ...rest }) => [id, rest]));
  return cs.map((c) => written.get(c.after.id));
}
