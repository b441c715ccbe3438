import { timestampDate } from "@bufbuild/protobuf/wkt";
import { decodeEvent, type Database, type EventLog, type EventRecord, type Logger, type Queryable, type Scope, type Subscription } from "@icv/platform";
import type { VerificationStore } from "./store/verifications.ts";

/** The consumer group that follows the proof service's revocations (its cursor lives in this schema). */
export const PROOF_REVOCATIONS_GROUP = "verification-proof-revocations";

/**
 * One `proof.revoked` event's payload (read as icv.events.v1.ProofRevoked), in the consumer's
 * transaction `q`: a verified verification of the event's scope whose proof it is moves to revoked
 * with the proof's revoked_at and reason; its events drive requests, SSE and webhooks as a revoke
 * does. Anything else (already revoked by the revoke call, never verified, a withdrawn proof of a
 * verification that was not stored, another scope) is left alone.
 */
export async function applyProofRevoked(store: VerificationStore, logger: Logger, q: Queryable, scope: Scope, payload: Record<string, unknown>): Promise<void> {
  const revoked = decodeEvent("proof.revoked", payload);
  if (!revoked.proofId || !revoked.revokedAt) return;
  const v = await store.byProof(q, scope, revoked.proofId);
  if (v?.status !== "verified" && v?.status !== "suspended") return;
  const done = await store.markRevoked(v, timestampDate(revoked.revokedAt), revoked.reason || "other", q);
  if (done) logger.info({ tenant_id: scope.tenantId, verification_id: v.id }, "verification revoked (followed its proof)");
}

/**
 * One `proof.suspended` or `proof.reinstated` event, in the consumer's transaction `q`: a verified
 * verification of the event's scope whose proof was suspended moves to suspended, a suspended one
 * whose proof was reinstated moves back to verified, with their events. Anything else (already
 * moved by the call that caused it, revoked meanwhile, another scope) is left alone.
 */
export async function applyProofSuspension(
  store: VerificationStore,
  logger: Logger,
  q: Queryable,
  scope: Scope,
  type: "proof.suspended" | "proof.reinstated",
  payload: Record<string, unknown>,
): Promise<void> {
  if (type === "proof.suspended") {
    const s = decodeEvent(type, payload);
    const v = s.proofId ? await store.byProof(q, scope, s.proofId) : undefined;
    if (v?.status !== "verified") return;
    const done = await store.markSuspension(v, { to: "suspended", at: s.suspendedAt ? timestampDate(s.suspendedAt) : new Date(), reason: s.reason }, q);
    if (done) logger.info({ tenant_id: scope.tenantId, verification_id: v.id }, "verification suspended (followed its proof)");
    return;
  }
  const r = decodeEvent(type, payload);
  const v = r.proofId ? await store.byProof(q, scope, r.proofId) : undefined;
  if (v?.status !== "suspended") return;
  const done = await store.markSuspension(v, { to: "verified", at: r.reinstatedAt ? timestampDate(r.reinstatedAt) : new Date() }, q);
  if (done) logger.info({ tenant_id: scope.tenantId, verification_id: v.id }, "verification reinstated (followed its proof)");
}

/**
 * The proof service owns the revoked and suspended states; this consumer makes the verification follow them. Each
 * event is applied once, in the same transaction that records its id (the platform's consumer
 * machinery), so a crash anywhere between the proof's revocation and this step converges: the
 * event is still in the proof service's outbox and is applied when this service is back.
 */
export function followProofRevocations(events: EventLog, db: Database, store: VerificationStore, logger: Logger): Promise<Subscription> {
  return events.consume({
    group: PROOF_REVOCATIONS_GROUP,
    topics: ["proof"],
    eventTypes: ["proof.revoked", "proof.suspended", "proof.reinstated"],
    db,
    schema: "verification",
    handle: (q: Queryable, e: EventRecord) => {
      const scope = { tenantId: e.tenantId, env: e.environment };
      if (e.eventType === "proof.revoked") return applyProofRevoked(store, logger, q, scope, e.payload);
      if (e.eventType === "proof.suspended" || e.eventType === "proof.reinstated") return applyProofSuspension(store, logger, q, scope, e.eventType, e.payload);
      return Promise.resolve();
    },
  });
}
