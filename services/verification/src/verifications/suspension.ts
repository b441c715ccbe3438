/**
 * Suspended (DECISIONS.md, Current control): a verified verification whose asset could not be
 * shown to be held again has its proof suspended (status-list value 2, validate answers
 * `suspended`) and is `suspended` itself until a later check reinstates it. The proof service
 * owns the proof's state and writes its proof.suspended / proof.reinstated event in the same
 * transaction; this service follows those events (proof-revocations.ts), so a crash right after
 * the proof call still ends with the verification moved. Moving it here too only makes the answer
 * and an immediate read agree. What triggers a suspension (scheduled domain re-checks) is issue 27.
 */
import { AppError, toDate, type Scope } from "@icv/platform";
import type { VerificationRow } from "../store/rows.ts";
import { rpcScope, type UseCaseDeps } from "./deps.ts";
import { getVerification } from "./read.ts";

/** verified → suspended; idempotent (a suspended one answers as it is). */
export async function suspendVerification(deps: UseCaseDeps, scope: Scope, id: string, reason: string): Promise<VerificationRow> {
  const v = await getVerification(deps, scope, id);
  if (v.status === "suspended") return v;
  if (v.status !== "verified") throw new AppError("invalid_state", `only a verified verification can be suspended (this one is ${v.status})`);
  const r = await deps.proofs.suspendProof({ scope: rpcScope(scope), proofId: id, reason });
  const at = toDate(r.status?.suspendedAt) ?? deps.clock.now();
  return (await deps.store.markSuspension(v, { to: "suspended", at, reason: r.status?.suspendedReason ?? reason })) ?? (await getVerification(deps, scope, id));
}

/** suspended → verified; idempotent (a verified one answers as it is). */
export async function reinstateVerification(deps: UseCaseDeps, scope: Scope, id: string): Promise<VerificationRow> {
  const v = await getVerification(deps, scope, id);
  if (v.status === "verified") return v;
  if (v.status !== "suspended") throw new AppError("invalid_state", `only a suspended verification can be reinstated (this one is ${v.status})`);
  await deps.proofs.reinstateProof({ scope: rpcScope(scope), proofId: id });
  return (await deps.store.markSuspension(v, { to: "verified", at: deps.clock.now() })) ?? (await getVerification(deps, scope, id));
}
