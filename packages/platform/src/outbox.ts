import type { Queryable } from "./database.ts";
import { newId } from "./ids.ts";

export interface OutboxEvent {
  aggregateType: string;
  aggregateId: string;
  eventType: string;
  tenantId: string;
  environment: "live" | "test";
  payload: Record<string, unknown>;
}

/**
 * Writes an event row into the owning service's outbox table, inside the caller's transaction,
 * so the state change and its event commit together or not at all. `<schema>.outbox` is made by
 * the platform's outbox DDL (packages/platform/migrations/outbox.sql, via openServiceDatabase).
 */
export async function appendEvent(q: Queryable, schema: string, ev: OutboxEvent, at: Date = new Date()): Promise<string> {
  const id = newId("event", at.getTime());
  await q.query(
    `INSERT INTO ${schema}.outbox (id, aggregate_type, aggregate_id, event_type, tenant_id, environment, payload, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [id, ev.aggregateType, ev.aggregateId, ev.eventType, ev.tenantId, ev.environment, JSON.stringify(ev.payload), at],
  );
  return id;
}

/** The events as seven parallel arrays (one per outbox column), for an unnest() insert. */
function eventColumns(events: OutboxEvent[], at: Date): unknown[][] {
  const cols: unknown[][] = [[], [], [], [], [], [], []];
  for (const ev of events) {
    const row = [newId("event", at.getTime()), ev.aggregateType, ev.aggregateId, ev.eventType, ev.tenantId, ev.environment, JSON.stringify(ev.payload)];
    row.forEach((v, i) => cols[i].push(v));
  }
  return cols;
}

/** INSERT … SELECT of events from parameters $n+1 … $n+8. */
const insertEvents = (schema: string, n: number) =>
  `INSERT INTO ${schema}.outbox (id, aggregate_type, aggregate_id, event_type, tenant_id, environment, payload, created_at)
   SELECT id, at, ag, et, t, e, p::jsonb, $${n + 8}::timestamptz
     FROM unnest($${n + 1}::text[], $${n + 2}::text[], $${n + 3}::text[], $${n + 4}::text[], $${n + 5}::text[], $${n + 6}::text[], $${n + 7}::text[]) AS u(id, at, ag, et, t, e, p)`;

/** Writes several events in one statement (batch state changes such as the expiry sweep). */
export async function appendEvents(q: Queryable, schema: string, events: OutboxEvent[], at: Date = new Date()): Promise<void> {
  if (!events.length) return;
  await q.query(insertEvents(schema, 0), [...eventColumns(events, at), at]);
}

/**
 * One statement that makes a state change and writes its events: `sql` is a data-modifying
 * statement with RETURNING; the events are written only when it returned a row. One round trip,
 * atomic without an explicit transaction. Answers the rows `sql` returned.
 * `also`: one more data-modifying statement in the same round trip (its parameters numbered from
 * `also.sql(base)`'s base + 1; it gates itself, e.g. `INSERT … SELECT … WHERE EXISTS (SELECT 1 FROM main)`).
 */
export function writeWithEvents<T>(q: Queryable, schema: string, sql: string, params: unknown[], events: OutboxEvent[], at: Date, also?: { sql: (base: number) => string; params: unknown[] }) {
  const n = params.length;
  return q.query<T>(
    `WITH main AS (${sql}), ev AS (${insertEvents(schema, n)} WHERE EXISTS (SELECT 1 FROM main))${also ? `, also AS (${also.sql(n + 8)})` : ""} SELECT * FROM main`,
    [...params, ...eventColumns(events, at), at, ...(also?.params ?? [])],
  );
}
