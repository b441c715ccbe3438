import type { Queryable } from "./database.ts";
import { newId } from "./ids.ts";
import { activeTraceparent } from "./tracing.ts";

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
 * the platform's outbox DDL (packages/platform/migrations/outbox*.sql, via openServiceDatabase).
 *
 * Tracing on, with a span active, every event written (here, by appendEvents and by
 * writeWithEvents) also stores the span's W3C `traceparent`: the relay and the consumers continue
 * the request's trace from it. Tracing off, the statements are the ones without that column.
 */
export async function appendEvent(q: Queryable, schema: string, ev: OutboxEvent, at: Date = new Date()): Promise<string> {
  const id = newId("event", at.getTime());
  const params = [id, ev.aggregateType, ev.aggregateId, ev.eventType, ev.tenantId, ev.environment, JSON.stringify(ev.payload), at];
  const tp = activeTraceparent();
  if (tp) params.push(tp);
  await q.query(
    tp
      ? `INSERT INTO ${schema}.outbox (id, aggregate_type, aggregate_id, event_type, tenant_id, environment, payload, created_at, traceparent)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`
      : `INSERT INTO ${schema}.outbox (id, aggregate_type, aggregate_id, event_type, tenant_id, environment, payload, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    params,
  );
  return id;
}

/** One event's seven outbox columns (id … payload). */
const eventRow = (ev: OutboxEvent, at: Date): unknown[] => [
  newId("event", at.getTime()),
  ev.aggregateType,
  ev.aggregateId,
  ev.eventType,
  ev.tenantId,
  ev.environment,
  JSON.stringify(ev.payload),
];

/** The events as seven parallel arrays (one per outbox column), for an unnest() insert. */
function eventColumns(events: OutboxEvent[], at: Date): unknown[][] {
  const cols: unknown[][] = [[], [], [], [], [], [], []];
  for (const ev of events) {
    eventRow(ev, at).forEach((v, i) => {
      cols[i].push(v);
    });
  }
  return cols;
}

const COLUMNS = "id, aggregate_type, aggregate_id, event_type, tenant_id, environment, payload, created_at";

/**
 * INSERT … SELECT of `count` events from parameters $n+1 … (seven per event, then the time and,
 * traced, the traceparent), written only when `main` returned a row. A few rows as VALUES: the
 * parameters need no array encoding on either side (the unnest form's cost for one or two events).
 */
const insertEventRows = (schema: string, n: number, count: number, traced: boolean) => {
  const at = n + 7 * count + 1;
  const rows = Array.from({ length: count }, (_, i) => {
    const b = n + 7 * i;
    return `($${b + 1}::text, $${b + 2}::text, $${b + 3}::text, $${b + 4}::text, $${b + 5}::text, $${b + 6}::text, $${b + 7}::jsonb)`;
  });
  return `INSERT INTO ${schema}.outbox (${COLUMNS}${traced ? ", traceparent" : ""})
   SELECT v.*, $${at}::timestamptz${traced ? `, $${at + 1}::text` : ""} FROM (VALUES ${rows.join(", ")}) AS v WHERE EXISTS (SELECT 1 FROM main)`;
};

/** INSERT … SELECT of events from parameters $n+1 … $n+8 (and, traced, every row's traceparent from $n+9). */
const insertEvents = (schema: string, n: number, traced: boolean) =>
  `INSERT INTO ${schema}.outbox (${COLUMNS}${traced ? ", traceparent" : ""})
   SELECT id, at, ag, et, t, e, p::jsonb, $${n + 8}::timestamptz${traced ? `, $${n + 9}::text` : ""}
     FROM unnest($${n + 1}::text[], $${n + 2}::text[], $${n + 3}::text[], $${n + 4}::text[], $${n + 5}::text[], $${n + 6}::text[], $${n + 7}::text[]) AS u(id, at, ag, et, t, e, p)`;

/** The unnest() insert of events (eight parameters from $n+1, no traceparent) that writes only the events of rows `main` returned (`main`'s `id` is their aggregate id). */
const insertEventsOfRows = (schema: string, n: number) => `${insertEvents(schema, n, false)} WHERE ag IN (SELECT id FROM main)`;

/** Writes several events in one statement (batch state changes such as the expiry sweep). */
export async function appendEvents(q: Queryable, schema: string, events: OutboxEvent[], at: Date = new Date()): Promise<void> {
  if (!events.length) return;
  const tp = activeTraceparent();
  await q.query(insertEvents(schema, 0, !!tp), tp ? [...eventColumns(events, at), at, tp] : [...eventColumns(events, at), at]);
}

/**
 * One statement that makes a state change and writes its events: `sql` is a data-modifying
 * statement with RETURNING; the events are written only when it returned a row. One round trip,
 * atomic without an explicit transaction. Answers the rows `sql` returned.
 * `also`: one more data-modifying statement in the same round trip (its parameters numbered from
 * `also.sql(base)`'s base + 1; it gates itself, e.g. `INSERT … SELECT … WHERE EXISTS (SELECT 1 FROM main)`).
 */
export function writeWithEvents<T>(q: Queryable, schema: string, sql: string, params: unknown[], events: OutboxEvent[], at: Date, also?: Also) {
  const tp = activeTraceparent();
  const values = [...params];
  let ev = "";
  if (events.length) {
    ev = `, ev AS (${insertEventRows(schema, params.length, events.length, !!tp)})`;
    for (const e of events) values.push(...eventRow(e, at));
    values.push(at);
    if (tp) values.push(tp);
  }
  return withMain<T>(q, sql, ev, values, also);
}

/** One more data-modifying statement in a write's round trip: its parameters are numbered from `sql(base)`'s base + 1. */
type Also = { sql: (base: number) => string; params: unknown[] };

/** `sql` as `main`, then `ev` (its events' part, parameters in `values`) and `also`: the rows `main` returned. */
const withMain = <T>(q: Queryable, sql: string, ev: string, values: unknown[], also?: Also) =>
  q.query<T>(
    `WITH main AS (${sql})${ev}${also ? `, also AS (${also.sql(values.length)})` : ""} SELECT * FROM main`,
    also ? [...values, ...also.params] : values,
  );

/**
 * writeWithEvents for many rows in one statement (a batch of batched(), batch.ts): `sql` writes
 * the rows and returns each one's `id`; each event is written only when the row of its
 * aggregate id was, at `at` (the latest of the rows' times, batch.ts `latest`: a batch's rows each
 * have their own, and an earlier one could order an event before its aggregate's previous ones).
 * `also`, as in writeWithEvents, gates itself on `main`. Not for a traced
 * request: its events would carry no traceparent (the callers write traced rows one by one).
 */
export function writeRowsWithEvents<T extends { id: string }>(
  q: Queryable,
  schema: string,
  sql: string,
  params: unknown[],
  events: OutboxEvent[],
  at: Date,
  also?: Also,
) {
  if (!events.length) return withMain<T>(q, sql, "", params, also);
  return withMain<T>(q, sql, `, ev AS (${insertEventsOfRows(schema, params.length)})`, [...params, ...eventColumns(events, at), at], also);
}
