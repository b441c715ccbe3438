/**
 * Current control (DECISIONS.md): a verified domain is checked again, by a call (/check, /verify,
 * the hosted page) or by the sweeper on its recheck_interval. A failed re-check suspends the
 * proof (status-list value 2), a passing one reinstates it; nothing here revokes. A re-check that
 * reached no name server (`unreachable`) suspends only once UNREACHABLE_STREAK of them came in a
 * row, so one flaky server cannot suspend a proof. An expired proof is not re-checked.
 */
import { randomInt } from "node:crypto";
import { AppError, type Scope } from "@icv/platform";
import type { DomainCheckRow, StoredCheck } from "../store/domain-checks.ts";
import type { VerificationRow } from "../store/rows.ts";
import type { UseCaseDeps } from "./deps.ts";
import { reinstateVerification, suspendVerification } from "./suspension.ts";

/** Consecutive unreachable checks before they suspend. */
export const UNREACHABLE_STREAK = 3;
/** A claimed re-check belongs to its replica this long; then another may take it (a replica that died). */
export const RECHECK_LEASE_MS = 5 * 60_000;

/** recheck_interval of a create: a whole number of seconds, at least the configured minimum. */
export function checkRecheckInterval(value: number | undefined, minimum: number): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isInteger(value) || value < minimum) {
    const message = `recheck_interval must be a whole number of seconds, at least ${minimum} (RECHECK_MIN_INTERVAL_S)`;
    throw new AppError("validation_error", message, { details: [{ field: "recheck_interval", message, code: "too_small" }] });
  }
  return value;
}

/** A verified or suspended domain whose proof has expired is not re-checked. */
export function refuseExpired(v: VerificationRow, now: Date): void {
  if ((v.status === "verified" || v.status === "suspended") && v.proof_expires_at && v.proof_expires_at <= now) {
    throw new AppError("invalid_state", "the proof of this domain has expired; it is no longer re-checked (create a new verification)");
  }
}

/**
 * The next due time: the interval after `from`, moved by up to a tenth of it either way, so the
 * re-checks of domains verified together drift apart instead of firing at once. The first one
 * (`first`) falls anywhere in the interval: the phases start spread.
 */
export function nextDue(from: Date, intervalS: number, first = false): Date {
  const ms = intervalS * 1000;
  const offset = first ? randomInt(1, ms + 1) : ms + randomInt(-Math.floor(ms / 10), Math.floor(ms / 10) + 1);
  return new Date(from.getTime() + Math.max(1, offset));
}

/**
 * What a re-check of a verified or suspended verification changes: suspended on a failure (after
 * the unreachable streak for `unreachable`), verified again on a pass. Answers the verification as
 * it stands afterwards. `streak` is the unreachable count including this check.
 */
export async function applyRecheck(deps: UseCaseDeps, scope: Scope, v: VerificationRow, check: StoredCheck, streak: number): Promise<VerificationRow> {
  if (check.passed) return v.status === "suspended" ? reinstateVerification(deps, scope, v.id) : v;
  // a check that could not run (test mode) says nothing about control
  const reason = check.reason;
  if (v.status !== "verified" || !reason) return v;
  if (reason === "unreachable" && streak < UNREACHABLE_STREAK) return v;
  return suspendVerification(deps, scope, v.id, reason);
}

/** After a check of a verified (or just verified) domain: the next scheduled re-check, if it has an interval. */
export async function scheduleAfter(deps: UseCaseDeps, scope: Scope, state: DomainCheckRow, row: VerificationRow, justVerified: boolean): Promise<Date | null> {
  if (scope.env === "test" || !state.recheck_interval_s || (row.status !== "verified" && row.status !== "suspended")) return null;
  const at = nextDue(deps.clock.now(), state.recheck_interval_s, justVerified);
  await deps.store.checks.scheduleNext(scope, row.id, at);
  return at;
}
