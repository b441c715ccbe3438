// The wire format of the verification event stream (text/event-stream).

/** A verification in one of these statuses never changes again: its stream ends after saying so. */
export const TERMINAL_STATUSES: ReadonlySet<string> = new Set(["failed", "expired", "revoked"]);

/** The outbox event type that becomes an SSE `status_changed` event (the only one that does). */
export const STATUS_CHANGED = "verification.status_changed";

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

// members of a status_changed outbox payload that the stream shows (type and channel are left out)
const ALWAYS = ["verification_id", "status", "previous_status", "changed_at"] as const;
const WHEN: Record<string, readonly string[]> = {
  verified: ["verified_at", "proof"],
  revoked: ["revoked_at", "revoked_reason"],
};

/** `status_changed` data: `{verification_id, status, previous_status, changed_at}` plus verified_at/proof or revoked_at/revoked_reason. */
export function statusChangedData(payload: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of ALWAYS) out[k] = payload[k] ?? null;
  for (const k of WHEN[String(payload.status)] ?? []) if (payload[k] !== undefined) out[k] = payload[k];
  return out;
}

/** The whole `status_changed` event of one outbox event. */
export const statusChangedEvent = (id: string, payload: Record<string, unknown>) => sseEvent("status_changed", statusChangedData(payload), id);
