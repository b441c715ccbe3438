/** The statements of a resent code: writing it under the resend rules, and undoing it when it could not be sent. */
import type { Queryable } from "@icv/platform";
import type { VerificationRow } from "./rows.ts";

const S = "verification";

/** The resent code, in one conditional UPDATE (VerificationStore.writeResentCode says which conditions). */
export async function writeResentCode(
  q: Queryable,
  v: VerificationRow,
  next: { codeHmac: string; expiresAt: Date },
  rules: { maxResends: number; minGapMs: number },
  at: Date,
): Promise<VerificationRow | undefined> {
  const r = await q.query<VerificationRow>(
    `UPDATE ${S}.verifications
        SET code_hmac = $4, challenge_expires_at = $5, resend_count = resend_count + 1, code_sent_at = $6, updated_at = $6
      WHERE id = $1 AND tenant_id = $2 AND environment = $3 AND status = 'pending' AND challenge_expires_at > $6
        AND resend_count < $7 AND COALESCE(code_sent_at, created_at) <= $8
      RETURNING *`,
    [v.id, v.tenant_id, v.environment, next.codeHmac, next.expiresAt, at, rules.maxResends, new Date(at.getTime() - rules.minGapMs)],
  );
  return r.rows[0];
}

/** The code, expiry and counters before a resend, back, if the row still holds the code it wrote; its test message goes too. */
export async function undoResentCode(q: Queryable, before: VerificationRow, written: VerificationRow, testMessageId?: string): Promise<void> {
  if (testMessageId) {
    await q.query(`DELETE FROM ${S}.test_messages WHERE id = $1 AND tenant_id = $2 AND environment = 'test'`, [testMessageId, before.tenant_id]);
  }
  await q.query(
    `UPDATE ${S}.verifications
        SET code_hmac = $5, challenge_expires_at = $6, resend_count = $7, code_sent_at = $8, updated_at = $9
      WHERE id = $1 AND tenant_id = $2 AND environment = $3 AND code_hmac = $4 AND status = 'pending'`,
    [
      before.id,
      before.tenant_id,
      before.environment,
      written.code_hmac,
      before.code_hmac,
      before.challenge_expires_at,
      before.resend_count,
      before.code_sent_at,
      before.updated_at,
    ],
  );
}
