/**
 * Redaction, export and retention of personal data (DECISIONS.md, "Personal data: at rest,
 * retention, erasure, export"; docs/privacy.md). The SQL is store/redaction.ts.
 */
import { AppError, toDate, type Scope } from "@icv/platform";
import type { MembershipRow, RedactionReason, RedactionTarget } from "../store/redaction.ts";
import type { VerificationRow } from "../store/rows.ts";
import { rpcScope, type UseCaseDeps } from "./deps.ts";

/** What a redaction answers: verifications erased (all of the target's, on a repeat too) and, of those, proofs a redaction revoked. */
export interface RedactCounts {
  redacted: number;
  revoked: number;
}

export const RETENTION_MAX_DAYS = 3650;

const unknown = (t: RedactionTarget) =>
  "id" in t ? new AppError("not_found", "verification not found") : new AppError("not_found", "no verification of this external user");

/**
 * Redacts one verification or every verification of an external user: a pending one is cancelled
 * first, a verified (or suspended) one's proof revoked (reason user_request) when `revokeProofs`,
 * then the personal data of each not yet redacted is erased, with verification.redacted.
 * Idempotent: a repeat finds them redacted and answers the same counts.
 */
export async function redact(deps: UseCaseDeps, scope: Scope, target: RedactionTarget, revokeProofs: boolean): Promise<RedactCounts> {
  const { store, clock, proofs } = deps;
  const rows = await store.redaction.targets(scope, target);
  if (!rows.length) throw unknown(target);
  const now = clock.now();
  const revokedNow: string[] = [];
  for (const v of rows) {
    if (v.status === "pending") {
      await store.redaction.cancelPending(v, now);
      store.settled.drop(v.id);
    } else if (revokeProofs && (v.status === "verified" || v.status === "suspended")) {
      const r = await proofs.revokeProof({ scope: rpcScope(scope), proofId: v.id, reason: "user_request" });
      await store.markRevoked(v, toDate(r.revokedAt) ?? now, r.reason);
      revokedNow.push(v.id);
    }
  }
  await store.redaction.markRevokedByRedaction(scope, revokedNow);
  const reason: RedactionReason = "id" in target ? "request" : "user_request";
  await store.redactIds(
    scope,
    rows.map((v) => v.id),
    now,
    reason,
  );
  const after = await store.redaction.targets(scope, target);
  return { redacted: after.filter((v) => v.redacted_at).length, revoked: after.filter((v) => v.redacted_revoked).length };
}

/** Everything held about one external user of the scope (NOT_FOUND when none): verifications oldest first and their request memberships. */
export async function exportUser(deps: UseCaseDeps, scope: Scope, externalUserId: string): Promise<{ rows: VerificationRow[]; memberships: MembershipRow[] }> {
  const { store } = deps;
  const rows = await store.redaction.targets(scope, { externalUserId });
  if (!rows.length) throw unknown({ externalUserId });
  return { rows, memberships: await store.redaction.memberships(rows.map((v) => v.id)) };
}

/** Sets the scope's retention: 1 to 3650 days, or 0 to keep verifications until redacted. */
export async function setRetention(deps: UseCaseDeps, scope: Scope, days: number): Promise<number> {
  if (!Number.isInteger(days) || days < 0 || days > RETENTION_MAX_DAYS)
    throw new AppError("validation_error", `retention_days must be an integer from 1 to ${RETENTION_MAX_DAYS} (0 clears it)`, {
      details: [{ field: "retention_days", message: `from 1 to ${RETENTION_MAX_DAYS}`, code: "out_of_range" }],
    });
  await deps.store.redaction.setRetention(scope, days, deps.clock.now());
  return days;
}
