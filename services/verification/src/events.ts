/** The events of a verification's status move (icv.events.v1; the store writes them with each move). */
import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { VerificationCompletedSchema, VerificationStatusChangedSchema } from "@icv/contracts/gen/icv/events/v1/verification_events_pb.ts";
import { outboxEvent, type OutboxEvent } from "@icv/platform";
import type { Status, VerificationRow } from "./store/rows.ts";

const ts = (d: Date | null) => (d ? timestampFromDate(d) : undefined);

/** The status_changed event (and completed, when verified) of one move. */
export function statusEvents(v: VerificationRow, previous: Status | null, at: Date): OutboxEvent[] {
  const head = { aggregateType: "verification", aggregateId: v.id, tenantId: v.tenant_id, environment: v.environment };
  const proof = v.proof_token ? { token: v.proof_token, expiresAt: ts(v.proof_expires_at) } : undefined;
  const verified = v.status === "verified";
  const revoked = v.status === "revoked";
  const events = [
    outboxEvent(
      "verification.status_changed",
      head,
      create(VerificationStatusChangedSchema, {
        verificationId: v.id,
        type: v.type,
        channel: v.channel,
        status: v.status,
        previousStatus: previous ?? undefined,
        changedAt: timestampFromDate(at),
        ...(verified ? { verifiedAt: ts(v.verified_at), proof } : {}),
        ...(revoked ? { revokedAt: ts(v.revoked_at), revokedReason: v.revoked_reason ?? undefined } : {}),
      }),
    ),
  ];
  if (verified) {
    events.push(
      outboxEvent(
        "verification.completed",
        head,
        create(VerificationCompletedSchema, {
          verificationId: v.id,
          type: v.type,
          channel: v.channel,
          status: v.status,
          verifiedAt: ts(v.verified_at),
          externalUserId: v.external_user_id ?? undefined,
          clientMetadata: (v.client_metadata ?? undefined) as JsonObject | undefined,
          proof,
          callbackUrl: v.callback_url ?? undefined,
        }),
      ),
    );
  }
  return events;
}
