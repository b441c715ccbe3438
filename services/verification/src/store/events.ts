/**
 * The events of a verification's status move (icv.events.v1; the store writes them with each move).
 * client_metadata travels sealed (sealed_client_metadata): the outbox and the event log hold no
 * personal data in clear; the webhook service opens it for the body it sends.
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  VerificationCompletedSchema,
  VerificationStatusChangedSchema,
  VerificationSuspensionSchema,
} from "@icv/contracts/gen/icv/events/v1/verification_events_pb.ts";
import { outboxEvent, sealEventMetadata, type OutboxEvent, type PersonalData } from "@icv/platform";
import type { Status, VerificationRow } from "./rows.ts";

const ts = (d: Date | null) => (d ? timestampFromDate(d) : undefined);

const headOf = (v: VerificationRow) => ({ aggregateType: "verification", aggregateId: v.id, tenantId: v.tenant_id, environment: v.environment });

/** The proof as events carry it: the JWT, its salt, and the SD-JWT VC when one was issued. */
const proofOf = (v: VerificationRow) =>
  v.proof_token
    ? { token: v.proof_token, expiresAt: ts(v.proof_expires_at), identifierSalt: v.proof_identifier_salt ?? undefined, sdJwtVc: v.proof_sd_jwt_vc ?? undefined }
    : undefined;

/**
 * The status_changed event (and completed, when verified from pending) of one move. A move back
 * to verified from suspended (reinstated) is no completion: its news is verification.reinstated.
 */
export function statusEvents(pd: PersonalData, v: VerificationRow, previous: Status | null, at: Date): OutboxEvent[] {
  const head = headOf(v);
  const proof = proofOf(v);
  const verified = v.status === "verified";
  const revoked = v.status === "revoked";
  const suspended = v.status === "suspended";
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
        ...(suspended ? { suspendedAt: ts(v.suspended_at), suspendedReason: v.suspended_reason ?? undefined } : {}),
      }),
    ),
  ];
  if (verified && previous !== "suspended") {
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
          sealedClientMetadata: sealEventMetadata(pd, v.id, v.client_metadata),
          proof,
          callbackUrl: v.callback_url ?? undefined,
        }),
      ),
    );
  }
  return events;
}

/**
 * `verification.suspended` (v is suspended now) or `verification.reinstated` (v is verified again;
 * `before` still holds the suspension that ended): the payload of verification.completed plus the
 * suspension's time and reason.
 */
export function suspensionEvent(pd: PersonalData, v: VerificationRow, before: VerificationRow): OutboxEvent {
  const suspension = v.status === "suspended" ? v : before;
  return outboxEvent(
    v.status === "suspended" ? "verification.suspended" : "verification.reinstated",
    headOf(v),
    create(VerificationSuspensionSchema, {
      verificationId: v.id,
      type: v.type,
      channel: v.channel,
      status: v.status,
      verifiedAt: ts(v.verified_at),
      externalUserId: v.external_user_id ?? undefined,
      sealedClientMetadata: sealEventMetadata(pd, v.id, v.client_metadata),
      proof: proofOf(v),
      callbackUrl: v.callback_url ?? undefined,
      suspendedAt: ts(suspension.suspended_at),
      reason: suspension.suspended_reason ?? "",
    }),
  );
}

/** A verification's creation event (status_changed to pending from no status): no row read before it can be stale by it. */
export const isCreation = (e: { eventType: string; payload: Record<string, unknown> }): boolean =>
  e.eventType === "verification.status_changed" && e.payload.status === "pending" && e.payload.previous_status == null;
