import type { Database, EventLog, EventRecord, Queryable, Subscription } from "@icv/platform";
import type { Verifications } from "./verifications.ts";

/** The consumer group that follows the proof service's revocations (its cursor lives in this schema). */
export const PROOF_REVOCATIONS_GROUP = "verification-proof-revocations";

/**
 * The proof service owns the revoked state; this consumer makes the verification follow it. Each
 * `proof.revoked` event is applied once, in the same transaction that records its id (the
 * platform's consumer machinery), so a crash anywhere between the proof's revocation and this
 * step converges: the event is still there and is applied when the service is back.
 */
export function followProofRevocations(events: EventLog, db: Database, verifications: Verifications): Promise<Subscription> {
  return events.consume({
    group: PROOF_REVOCATIONS_GROUP,
    topics: ["proof"],
    db,
    schema: "verification",
    handle: (q: Queryable, e: EventRecord) =>
      e.eventType === "proof.revoked" ? verifications.onProofRevoked(q, { tenantId: e.tenantId, env: e.environment }, e.payload) : Promise.resolve(),
  });
}
