// verification.redacted (docs/privacy.md): the stored bodies of that verification's deliveries keep
// no personal part. Their client_metadata and external_user_id become null and their proof loses its
// SD-JWT VC (its disclosures hold the identifier), in the consumer's
// transaction that plans the redacted event's own deliveries (so it happens once per event).
import type { EventRecord, Queryable } from "@icv/platform";

const S = "webhook";

/** Nulls the personal parts of the stored payloads of the verifications these events redacted. */
export async function redactStoredPayloads(q: Queryable, events: EventRecord[]): Promise<void> {
  const redacted = events.filter((e) => e.eventType === "verification.redacted");
  for (const e of redacted) {
    await q.query(
      `UPDATE ${S}.deliveries
          SET payload = ((CASE WHEN payload::jsonb ? 'client_metadata' THEN payload::jsonb || jsonb_build_object('client_metadata', NULL, 'external_user_id', NULL)
                           ELSE payload::jsonb END) #- '{proof,sd_jwt_vc}')::text
        WHERE verification_id = $1 AND tenant_id = $2 AND environment = $3 AND event_type <> 'verification.redacted'
          AND (payload::jsonb ? 'client_metadata' OR payload::jsonb ? 'external_user_id' OR payload::jsonb ? 'proof')`,
      [e.aggregateId, e.tenantId, e.environment],
    );
  }
}
