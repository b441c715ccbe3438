/** The payloads of the verification events (shapes unchanged; the store writes them with each move). */
import type { OutboxEvent } from "@icv/platform";
import type { Status, VerificationRow } from "./store/rows.ts";

/** The status_changed event (and completed, when verified) of one move. */
export function statusEvents(v: VerificationRow, previous: Status | null, at: Date): OutboxEvent[] {
  const base = { aggregateType: "verification", aggregateId: v.id, tenantId: v.tenant_id, environment: v.environment };
  const proof = v.proof_token ? { token: v.proof_token, expires_at: v.proof_expires_at?.toISOString() } : undefined;
  const events: OutboxEvent[] = [
    {
      ...base,
      eventType: "verification.status_changed",
      payload: {
        verification_id: v.id,
        type: v.type,
        channel: v.channel,
        status: v.status,
        previous_status: previous,
        changed_at: at.toISOString(),
        ...(v.status === "verified" ? { verified_at: v.verified_at?.toISOString(), proof } : {}),
        ...(v.status === "revoked" ? { revoked_at: v.revoked_at?.toISOString(), revoked_reason: v.revoked_reason } : {}),
      },
    },
  ];
  if (v.status === "verified") {
    events.push({
      ...base,
      eventType: "verification.completed",
      payload: {
        verification_id: v.id,
        type: v.type,
        channel: v.channel,
        status: v.status,
        verified_at: v.verified_at?.toISOString(),
        external_user_id: v.external_user_id,
        client_metadata: v.client_metadata,
        proof,
      },
    });
  }
  return events;
}
