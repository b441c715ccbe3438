// verification.redacted (docs/privacy.md, "Redaction"): the redacted verification's proof keeps its
// JWT (it holds only the identifier's salted hash, so it still validates) but loses its stored
// SD-JWT VC, whose disclosures hold the identifier. Applied by the proof service's own consumer
// group, in the consumer's transaction: each event once, and setting NULL twice changes nothing.
import type { EventLog, EventRecord, Logger, Queryable, Database, Subscription } from "@icv/platform";
import { eraseCredentials } from "./store/proofs.ts";

export const REDACTION_CONSUMER_GROUP = "proof-redaction";

/** Erases the stored SD-JWT VC of the proofs of the verifications these events redacted (their own scope only). */
export async function eraseRedactedCredentials(q: Queryable, events: EventRecord[]): Promise<void> {
  const redacted = events.filter((e) => e.eventType === "verification.redacted");
  await eraseCredentials(
    q,
    redacted.map((e) => ({ id: e.aggregateId, tenantId: e.tenantId, env: e.environment })),
  );
}

/** Follows the verification events as the `proof-redaction` group. */
export function followRedactions(events: EventLog, db: Database, log: Logger): Promise<Subscription> {
  log.debug({ group: REDACTION_CONSUMER_GROUP }, "following verification.redacted");
  return events.consume({
    group: REDACTION_CONSUMER_GROUP,
    topics: ["verification"],
    eventTypes: ["verification.redacted"],
    db,
    schema: "proof",
    handleBatch: eraseRedactedCredentials,
  });
}
