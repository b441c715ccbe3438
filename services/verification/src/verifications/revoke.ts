/** Revoking a verification's proof. */
import { AppError, toDate, type Scope } from "@icv/platform";
import type { VerificationRow } from "../store/rows.ts";
import { rpcScope, type UseCaseDeps } from "./deps.ts";
import { getVerification } from "./read.ts";

/**
 * Revokes the proof. The proof service owns the revoked state (validation sees it at once) and
 * writes its `proof.revoked` event in the same transaction; this service follows that event
 * (proof-revocations.ts), so a crash right after the proof call still ends with the verification
 * revoked. Marking it here too only makes this answer and an immediate read agree. Idempotent.
 */
export async function revokeVerification(deps: UseCaseDeps, scope: Scope, id: string, reason: string): Promise<VerificationRow> {
  const v = await getVerification(deps, scope, id);
  if (v.status === "revoked") return v;
  if (v.status !== "verified" && v.status !== "suspended")
    throw new AppError("invalid_state", `only a verified (or suspended) verification can be revoked (this one is ${v.status})`);
  const r = await deps.proofs.revokeProof({ scope: rpcScope(scope), proofId: id, reason });
  const revokedAt = toDate(r.revokedAt) ?? deps.clock.now();
  return (await deps.store.markRevoked(v, revokedAt, r.reason)) ?? (await getVerification(deps, scope, id));
}
