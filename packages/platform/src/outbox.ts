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
 * so the state change and its event commit together or not at all. Every service migration
 * creates `<schema>.outbox` with the columns used here.
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

/** Writes several events in one statement (batch state changes such as the expiry sweep). */
export async function appendEvents(q: Queryable, schema: string, events: OutboxEvent[], at: Date = new Date()): Promise<void> {
  if (!events.length) return;
  const cols: unknown[][] = [[], [], [], [], [], [], []];
  for (const ev of events) {
    const row = [newId("event", at.getTime()), ev.aggregateType, ev.aggregateId, ev.eventType, ev.tenantId, ev.environment, JSON.stringify(ev.payload)];
    row.forEach((v, i) => cols[i].push(v));
  }
  await q.query(
    `INSERT INTO ${schema}.outbox (id, aggregate_type, aggregate_id, event_type, tenant_id, environment, payload, created_at)
     SELECT id, at, ag, et, t, e, p::jsonb, $8 FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[]) AS u(id, at, ag, et, t, e, p)`,
    [...cols, at],
  );
}
