import { writeWithEvents, type OutboxEvent, type Queryable } from "@icv/platform";
import type { Status, VerificationRow } from "./rows.ts";

const S = "verification";

/** Where a suspension moves a verification: to suspended (why, since when), or back to verified. */
export type SuspensionMove = { to: "suspended"; at: Date; reason: string } | { to: "verified"; at: Date };

/** The row a suspension move makes of v, and the status it moves from. */
export function suspensionMove(v: VerificationRow, move: SuspensionMove): { from: Status; after: VerificationRow } {
  const suspended = move.to === "suspended";
  return {
    from: suspended ? "verified" : "suspended",
    after: { ...v, status: move.to, suspended_at: suspended ? move.at : null, suspended_reason: suspended ? move.reason : null, updated_at: move.at },
  };
}

/**
 * verified → suspended (its proof was suspended) or suspended → verified (reinstated), with its
 * events (status_changed and verification.suspended / .reinstated), in one statement; undefined
 * when it was not in the state it moves from.
 */
export async function writeSuspension(q: Queryable, v: VerificationRow, move: SuspensionMove, events: OutboxEvent[]): Promise<VerificationRow | undefined> {
  const { from, after } = suspensionMove(v, move);
  const r = await writeWithEvents<VerificationRow>(
    q,
    S,
    `UPDATE ${S}.verifications SET status = $4, suspended_at = $5, suspended_reason = $6, updated_at = $7
      WHERE id = $1 AND tenant_id = $2 AND environment = $3 AND status = $8 RETURNING *`,
    [v.id, v.tenant_id, v.environment, move.to, after.suspended_at, after.suspended_reason, move.at, from],
    events,
    move.at,
  );
  return r.rows[0];
}
