import type { Database, EventLog, EventRecord, Logger, Queryable, Scope, Subscription } from "@icv/platform";
import type { VerificationStore } from "./store/index.ts";

/** The consumer group that follows the proof service's revocations (its cursor lives in this schema). */
export const PROOF_REVOCATIONS_GROUP = "verification-proof-revocations";

/**
 * One `proof.revoked` event (payload `{proof_id, reason, revoked_at}`), in the consumer's
 * transaction `q`: a verified verification of the event's scope whose proof it is moves to revoked
 * with the proof's revoked_at and reason; its events drive requests, SSE and webhooks as a revoke
 * does. Anything else (already revoked by the revoke call, never verified, a withdrawn proof of a
 * verification that was not stored, another scope) is left alone.
 */
export async function applyProofRevoked(
  store: VerificationStore,
  logger: Logger,
  q: Queryable,
  scope: Scope,
  payload: { proof_id?: unknown; revoked_at?: unknown; reason?: unknown },
): Promise<void> {
  if (typeof payload.proof_id !== "string" || typeof payload.revoked_at !== "string") return;
  const v = await store.byProof(q, scope, payload.proof_id);
  if (!v || v.status !== "verified") return;
  const done = await store.markRevoked(v, new Date(payload.revoked_at), typeof payload.reason === "string" ? payload.reason : "other", q);
  if (done) logger.info({ tenant_id: scope.tenantId, verification_id: v.id }, "verification revoked (followed its proof)");
}

/**
 * The proof service owns the revoked state; this consumer makes the verification follow it. Each
 * event is applied once, in the same transaction that records its id (the platform's consumer
 * machinery), so a crash anywhere between the proof's revocation and this step converges: the
 * event is still in the proof service's outbox and is applied when this service is back.
 */
export function followProofRevocations(events: EventLog, db: Database, store: VerificationStore, logger: Logger): Promise<Subscription> {
  return events.consume({
    group: PROOF_REVOCATIONS_GROUP,
    topics: ["proof"],
    db,
    schema: "verification",
    handle: (q: Queryable, e: EventRecord) =>
      e.eventType === "proof.revoked" ? applyProofRevoked(store, logger, q, { tenantId: e.tenantId, env: e.environment }, e.payload) : Promise.resolve(),
  });
}
