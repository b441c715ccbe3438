import type { Queryable } from "../database.ts";
import type { Logger } from "../logger.ts";
import { startSweeper } from "../sweeper.ts";
import { tracingEnabled } from "../tracing.ts";
import type { ConsumerOptions, EventRecord } from "./event-log.ts";
import { processSpan, type MessagingSystem } from "./spans.ts";

/**
 * The idempotent half of every consumer: records the batch's event ids in the consumer's
 * `event_consumed` table and handles only the ids that were new, all in the caller's transaction.
 * An event delivered again (relay or consumer crashed before acknowledging) finds its id and is
 * skipped. Answers the events handled now.
 */
export async function applyEvents(
  q: Queryable,
  opts: Handlers & Pick<ConsumerOptions, "schema">,
  events: EventRecord[],
  system?: MessagingSystem,
): Promise<EventRecord[]> {
  const unique = uniqueEvents(events);
  if (!unique.length) return [];
  const r = await q.query<{ event_id: string }>(
    `INSERT INTO ${opts.schema}.event_consumed (consumer, event_id) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING RETURNING event_id`,
    [opts.group, unique.map((e) => e.id)],
  );
  return handleFresh(q, opts, unique, new Set(r.rows.map((x) => x.event_id)), system);
}

type Handlers = Pick<ConsumerOptions, "handle" | "handleBatch" | "group">;

/** Each event id once, in order. */
export const uniqueEvents = (events: EventRecord[]): EventRecord[] => [...new Map(events.map((e) => [e.id, e])).values()];

/**
 * The events of a batch the group acts on, each id once: those of its event types (eventTypes),
 * narrowed by its own read (relevant). Both transports record and handle only these.
 */
export async function actionable(opts: Pick<ConsumerOptions, "eventTypes" | "relevant">, events: EventRecord[]): Promise<EventRecord[]> {
  const typed = uniqueEvents(opts.eventTypes ? events.filter((e) => opts.eventTypes!.includes(e.eventType)) : events);
  return opts.relevant && typed.length ? opts.relevant(typed) : typed;
}

/**
 * Hands the events whose ids were recorded just now (`fresh`) to the consumer: all at once, or one
 * by one; tracing on, each handling in its CONSUMER span (spans.ts processSpan).
 */
export async function handleFresh(q: Queryable, opts: Handlers, unique: EventRecord[], fresh: Set<string>, system?: MessagingSystem): Promise<EventRecord[]> {
  const handled = unique.filter((e) => fresh.has(e.id));
  if (!handled.length) return handled;
  if (opts.handleBatch)
    await (tracingEnabled() ? processSpan({ group: opts.group }, system, handled, () => opts.handleBatch!(q, handled)) : opts.handleBatch(q, handled));
  else if (opts.handle)
    for (const e of handled) await (tracingEnabled() ? processSpan({ group: opts.group }, system, [e], () => opts.handle!(q, e)) : opts.handle(q, e));
  else throw new Error("a consumer needs handle or handleBatch");
  return handled;
}

/** How long an applied event's id is remembered: far beyond any redelivery (Kafka's default retention). */
const REMEMBER_MS = 7 * 24 * 3600_000;

/** Forgets, hourly, the applied ids old enough that no redelivery can bring them back. */
export function startConsumedPruning(opts: Pick<ConsumerOptions, "db" | "schema" | "group">, logger: Logger): { stop(): Promise<void> } {
  return startSweeper(
    `event-consumed:${opts.group}`,
    async () =>
      (
        await opts.db.query(`DELETE FROM ${opts.schema}.event_consumed WHERE consumer = $1 AND consumed_at < $2`, [
          opts.group,
          new Date(Date.now() - REMEMBER_MS),
        ])
      ).rowCount,
    3600_000,
    logger,
  );
}
