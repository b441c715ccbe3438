import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { ProofRefSchema, type VerificationStatusChanged } from "@icv/contracts/gen/icv/events/v1/verification_events_pb.ts";
import { wireJson } from "@icv/platform";

// The wire format of the verification event stream (text/event-stream).

/** A verification in one of these statuses never changes again: its stream ends after saying so. */
export const TERMINAL_STATUSES: ReadonlySet<string> = new Set(["failed", "expired", "revoked"]);

/** The outbox event type that becomes an SSE `status_changed` event (the only one that does). */
export const STATUS_CHANGED = "verification.status_changed" as const;

/**
 * SSE text as it is sent to many streams: the text, and the same bytes framed once as an HTTP/1.1
 * chunk (`<hex length>CRLF text CRLF`), which a chunked response writes to its socket as is.
 */
export interface Chunk {
  text: string;
  framed: Buffer;
}

export function chunk(text: string): Chunk {
  const body = Buffer.from(text);
  return { text, framed: Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from("\r\n")]) };
}

/** The heartbeat: an SSE comment line, ignored by clients, that keeps proxies from timing out. */
export const HEARTBEAT = chunk(": heartbeat\n\n");

/** How long a browser waits before it reconnects after the stream dropped (sent once per stream). */
export const RETRY_MS = 3000;

/** One SSE event. JSON.stringify never writes a raw line break, so `data` stays one line. */
export function sseEvent(event: string, data: unknown, id?: string): string {
  return `${id ? `id: ${id}\n` : ""}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

const iso = (t: Timestamp | undefined) => (t ? timestampDate(t).toISOString() : undefined);

/**
 * `status_changed` data of a `verification.status_changed` event: `{verification_id, status,
 * previous_status, changed_at}` plus verified_at/proof when verified, revoked_at/revoked_reason
 * when revoked, suspended_at/suspended_reason when suspended (type and channel are left out).
 */
export function statusChangedData(m: VerificationStatusChanged): Record<string, unknown> {
  const out: Record<string, unknown> = {
    verification_id: m.verificationId,
    status: m.status,
    previous_status: m.previousStatus ?? null,
    changed_at: iso(m.changedAt) ?? null,
  };
  if (m.status === "verified") {
    if (m.verifiedAt) out.verified_at = iso(m.verifiedAt);
    if (m.proof) out.proof = wireJson(ProofRefSchema, m.proof);
  } else if (m.status === "revoked") {
    if (m.revokedAt) out.revoked_at = iso(m.revokedAt);
    if (m.revokedReason !== undefined) out.revoked_reason = m.revokedReason;
  } else if (m.status === "suspended") {
    if (m.suspendedAt) out.suspended_at = iso(m.suspendedAt);
    if (m.suspendedReason !== undefined) out.suspended_reason = m.suspendedReason;
  }
  return out;
}

/** The whole `status_changed` event of one outbox event. */
export const statusChangedEvent = (id: string, m: VerificationStatusChanged) => sseEvent("status_changed", statusChangedData(m), id);
