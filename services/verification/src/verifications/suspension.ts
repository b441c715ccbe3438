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
import type { VerificationRow } from "../store/index.ts";
import { rpcScope, type UseCaseHost } from "./deps.ts";

/** verified → suspended; idempotent (a suspended one answers as it is). */
export async function suspendVerification(vs: UseCaseHost, scope: Scope, id: string, reason: string): Promise<VerificationRow> {
  const v = await vs.get(scope, id);
  if (v.status === "suspended") return v;
  if (v.status !== "verified") throw new AppError("invalid_state", `only a verified verification can be suspended (this one is ${v.status})`);
  const r = await vs.d.proofs.suspendProof({ scope: rpcScope(scope), proofId: id, reason });
  const at = toDate(r.status?.suspendedAt) ?? vs.d.clock.now();
  return (await vs.d.store.markSuspension(v, { to: "suspended", at, reason: r.status?.suspendedReason ?? reason })) ?? (await vs.get(scope, id));
}

/** suspended → verified; idempotent (a verified one answers as it is). */
export async function reinstateVerification(vs: UseCaseHost, scope: Scope, id: string): Promise<VerificationRow> {
  const v = await vs.get(scope, id);
  if (v.status === "verified") return v;
  if (v.status !== "suspended") throw new AppError("invalid_state", `only a suspended verification can be reinstated (this one is ${v.status})`);
  await vs.d.proofs.reinstateProof({ scope: rpcScope(scope), proofId: id });
  return (await vs.d.store.markSuspension(v, { to: "verified", at: vs.d.clock.now() })) ?? (await vs.get(scope, id));
}
