import type { EnvName } from "../scope.ts";
import { tracingEnabled } from "../tracing.ts";
import type { EventRecord } from "./event-log.ts";

/** An outbox row as selected by the relay and the postgres transport. */
export interface OutboxRow {
  id: string;
  seq: number | null;
  aggregate_type: string;
  aggregate_id: string;
  event_type: string;
  tenant_id: string;
  environment: EnvName;
  payload: Record<string, unknown> | null;
  created_at: Date;
  /** Selected only while tracing is on (outboxColumns). */
  traceparent?: string | null;
}

/** The outbox columns, with seq cast so both drivers answer a number. */
export const OUTBOX_COLUMNS = "id, seq::float8 AS seq, aggregate_type, aggregate_id, event_type, tenant_id, environment, payload, created_at";
const TRACED_COLUMNS = `${OUTBOX_COLUMNS}, traceparent`;

/** The columns to read: with each row's traceparent while tracing is on, the same as ever while it is off. */
export const outboxColumns = (): string => (tracingEnabled() ? TRACED_COLUMNS : OUTBOX_COLUMNS);

export const toRecord = (r: OutboxRow): EventRecord => {
  const e: EventRecord = {
    id: r.id,
    aggregateType: r.aggregate_type,
    aggregateId: r.aggregate_id,
    eventType: r.event_type,
    tenantId: r.tenant_id,
    environment: r.environment,
    payload: r.payload ?? {},
    createdAt: r.created_at,
  };
  if (r.traceparent) e.traceparent = r.traceparent;
  return e;
};
