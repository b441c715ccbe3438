/** Reading verifications: one as it stands now, a page, the sweep of stale pending ones, and the pending one a user action needs. */
import { AppError, type Scope } from "@icv/platform";
import type { ListFilter, VerificationRow } from "../store/rows.ts";
import type { UseCaseDeps } from "./deps.ts";

/** The verification as it stands now; a pending one whose challenge ran out is expired first. */
export async function getVerification(deps: UseCaseDeps, scope: Scope, id: string): Promise<VerificationRow> {
  const v = await deps.store.get(scope, id);
  if (!v) throw new AppError("not_found", "verification not found");
  if (v.status === "pending" && v.challenge_expires_at <= deps.clock.now()) {
    return (await deps.store.expireOne(v, deps.clock.now())) ?? (await getVerification(deps, scope, id));
  }
  return v;
}

/** A page of the tenant's verifications; due pending ones are expired first, so none shows a stale pending. */
export async function listVerifications(deps: UseCaseDeps, scope: Scope, f: ListFilter) {
  await expireDue(deps, scope);
  return deps.store.list(scope, f);
}

/** Sweeps stale pending verifications (of one scope, or all) to expired; returns how many moved. */
export async function expireDue(deps: UseCaseDeps, scope?: Scope): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await deps.store.expireDue(deps.clock.now(), 500, scope);
    total += n;
    if (n < 500) return total;
  }
}

/** Loads a verification that must be pending for a user action; expired and other states answer their error. */
export async function pendingForAction(deps: UseCaseDeps, scope: Scope, id: string, loaded?: VerificationRow): Promise<VerificationRow> {
  const v = loaded ?? (await getVerification(deps, scope, id));
  if (v.status === "expired") throw new AppError("challenge_expired", "the challenge has expired; create a new verification");
  if (v.status !== "pending") throw new AppError("invalid_state", `verification is ${v.status}`);
  return v;
}

/** A domain verification's check state (the hosted page's domain assets: one query for all). */
export const domainStates = (deps: UseCaseDeps, scope: Scope, ids: string[]) => deps.store.checks.many(scope, ids);
