/** The two ends of an answer: pending → verified with its proof, or a counted wrong attempt. */
import type { JsonObject } from "@bufbuild/protobuf";
import { AppError, ts, type ProofMethod, type Scope } from "@icv/platform";
import type { Status, VerificationRow } from "../store/rows.ts";
import { rpcScope, type Failure, type UseCaseDeps } from "./deps.ts";
import { issued, toProofFormat } from "./proofs.ts";
import { getVerification, pendingForAction } from "./read.ts";

/**
 * pending → verified, shown by `method` (the proof's claim and the row's; an OAuth sign-in adds
 * the account's `subjectHash`). The proof is issued
 * first (idempotent by verification id), then the row moves with its events in one
 * transaction; a crash between the two is healed by a retry, which gets the same proof.
 */
export async function completeVerification(
  deps: UseCaseDeps,
  scope: Scope,
  v: VerificationRow,
  method: ProofMethod,
  subjectHash?: string,
): Promise<VerificationRow> {
  const now = deps.clock.now();
  const proof = await deps.proofs.issueProof({
    scope: rpcScope(scope),
    proofId: v.id,
    type: v.type,
    channel: v.channel,
    identifier: v.identifier_canonical,
    externalUserId: v.external_user_id ?? undefined,
    verifiedAt: ts(now),
    expiresInSeconds: v.proof_expires_in,
    method,
    subjectHash,
    format: toProofFormat(v.proof_format),
    holderKey: (v.holder_key ?? undefined) as JsonObject | undefined,
  });
  const done = await deps.store.markVerified(v, { ...issued(proof), method }, now);
  if (done) {
    deps.logger.info({ request_id: scope.requestId, tenant_id: scope.tenantId, verification_id: v.id, kid: proof.kid }, "verification verified");
    return done;
  }
  const cur = await getVerification(deps, scope, v.id);
  if (cur.status === "verified") return cur;
  // it left pending (expired or failed) while the proof was being signed: withdraw that proof
  await deps.proofs.revokeProof({ scope: rpcScope(scope), proofId: v.id, reason: "other" });
  throw new AppError(cur.status === "expired" ? "challenge_expired" : "invalid_state", `verification is ${cur.status as Status}`);
}

/** Counts a wrong answer: throws `code` with attempts_remaining, or max_attempts_exceeded when it was the last try. */
export async function failAttempt(deps: UseCaseDeps, scope: Scope, v: VerificationRow, [code, message]: Failure): Promise<never> {
  const after = await deps.store.recordFailedAttempt(scope, v.id, deps.clock.now());
  if (!after) {
    await pendingForAction(deps, scope, v.id); // it moved on meanwhile: answer its new state
    throw new AppError("invalid_state", "verification is no longer pending");
  }
  if (after.status === "failed") {
    throw new AppError("max_attempts_exceeded", "too many wrong attempts; the verification has failed", {
      extra: { attempts_remaining: 0 },
    });
  }
  const remaining = after.max_attempts - after.attempts;
  throw new AppError(code, message, {
    extra: { attempts_remaining: remaining },
  });
}
