import type { Queryable } from "../database.ts";
import type { ConsumerOptions, EventRecord } from "./event-log.ts";

/**
 * The idempotent half of every consumer: records the batch's event ids in the consumer's
 * `event_consumed` table and handles only the ids that were new, all in the caller's transaction.
 * An event delivered again (relay or consumer crashed before acknowledging) finds its id and is
 * skipped. Answers the events handled now.
 */
export async function applyEvents(q: Queryable, opts: Pick<ConsumerOptions, "schema" | "group" | "handle">, events: EventRecord[]): Promise<EventRecord[]> {
  const unique = [...new Map(events.map((e) => [e.id, e])).values()];
  if (!unique.length) return [];
  const r = await q.query<{ event_id: string }>(
    `INSERT INTO ${opts.schema}.event_consumed (consumer, event_id) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING RETURNING event_id`,
    [opts.group, unique.map((e) => e.id)],
  );
  const fresh = new Set(r.rows.map((x) => x.event_id));
  const handled = unique.filter((e) => fresh.has(e.id));
  for (const e of handled) await opts.handle(q, e);
  return handled;
}

/** SQL of the consumer tables a schema needs before it can consume (see the webhook migrations). */
export const consumerTablesSql = (schema: string) => `
CREATE TABLE ${schema}.event_consumed (
  consumer text NOT NULL, event_id text NOT NULL, consumed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer, event_id));
CREATE INDEX event_consumed_age ON ${schema}.event_consumed (consumed_at);
CREATE TABLE ${schema}.event_cursors (
  consumer text NOT NULL, source text NOT NULL, position bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (consumer, source));
`;

/** Forgets processed ids older than the age at which a redelivery can still happen. */
export async function pruneConsumed(q: Queryable, schema: string, olderThan: Date): Promise<number> {
  const r = await q.query(`DELETE FROM ${schema}.event_consumed WHERE consumed_at < $1`, [olderThan]);
  return r.rowCount;
}
