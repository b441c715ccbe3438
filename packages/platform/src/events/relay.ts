import type { Config } from "../config.ts";
import type { Database, Queryable } from "../database.ts";
import type { Logger } from "../logger.ts";
import type { EventRecord } from "./event-log.ts";
import type { KafkaPublisher } from "./kafka.ts";
import { EVENTS_CHANNEL, OUTBOX_CHANNEL } from "./channels.ts";
import { startPump } from "./pump.ts";
import { trackOutboxLag } from "../metrics.ts";
import { runsBackgroundWork } from "../workers.ts";
import { outboxColumns, toRecord, type OutboxRow } from "./records.ts";
import { inMessagesSpan, recordMessagesSpan, SpanKind, tracingEnabled } from "../tracing.ts";

const BATCH = 500;
const RETENTION_MS = 7 * 24 * 3600_000;

export interface OutboxRelayOptions {
  config: Config;
  db: Database;
  /** The owning service's schema (its outbox is `<schema>.outbox`). */
  schema: string;
  logger: Logger;
  /** Publishes to Kafka instead of stamping rows for the postgres transport (default: by config). */
  publisher?: { publish(events: EventRecord[]): Promise<void>; close?(): Promise<void> };
  /** Crash-test seam: runs after a batch went to Kafka and before the rows are marked published. */
  afterPublish?(events: EventRecord[]): void | Promise<void>;
}

export interface OutboxRelay {
  /** Publishes what is pending now (tests, and callers that just wrote). */
  wake(): void;
  stop(): Promise<void>;
}

/**
 * Publishes one service's outbox, one replica at a time (a transaction-scoped advisory lock), in
 * created order, so one aggregate's events keep their order.
 * - postgres transport: stamps each row's `seq` in commit order and NOTIFYs consumers;
 * - kafka transport: sends the rows, then marks them published; a crash in between sends them
 *   again, and consumers skip ids they have handled.
 * Woken by the outbox trigger's NOTIFY, and polls. Published rows are kept 7 days (SSE replay).
 * Under `npm start` with several workers only the background worker relays (workers.ts): the
 * trigger's NOTIFY wakes it for the writes of every worker.
 * Tracing on, each batch that holds events written under a span is a PRODUCER span
 * (`publish <schema>.outbox`): in the request's trace when the batch is one request's events, else
 * a trace of its own linked to each event's (the stored `traceparent`s; on Kafka each message
 * also carries its event's as a `traceparent` header).
 */
export async function startOutboxRelay(opts: OutboxRelayOptions): Promise<OutboxRelay> {
  if (!runsBackgroundWork()) return { wake() {}, stop: async () => {} };
  const { config, db, schema } = opts;
  const logger = opts.logger.child({ component: "outbox-relay", schema });
  const publisher = opts.publisher ?? (config.KAFKA_BROKERS ? await connectKafkaPublisher(config, logger) : undefined);
  if (!publisher) {
    // a schema opened without the platform's outbox migrations has no stamp function: say so now,
    // rather than fail every run
    const r = await db.query<{ ok: boolean }>(`SELECT to_regprocedure($1) IS NOT NULL AS ok`, [`${schema}.outbox_stamp(text, integer, text, boolean)`]);
    if (!r.rows[0].ok)
      throw new Error(`${schema}.outbox_stamp is missing: open the ${schema} database with its outbox migrations (openServiceDatabase { outbox: true })`);
  }
  let lastPrune = 0;
  const spanName = `publish ${schema}.outbox`;
  const spanAttributes = (n: number) => ({
    "messaging.system": publisher ? "kafka" : "postgresql",
    "messaging.operation.type": "send",
    "messaging.operation.name": "publish",
    "messaging.destination.name": `${schema}.outbox`,
    "messaging.batch.message_count": n,
  });
  // one statement (outbox_003_stamping.sql, by the key since outbox_004_key.sql): the relay lock,
  // the stamps in created order and the NOTIFY (sent at commit); tracing on, it also answers the
  // batch's traceparents, for the relay's span
  const stamp = async (): Promise<{ n: number; traces?: string[] | null }> => {
    const r = await db.query<{ n: number; traces: string[] | null }>(
      `SELECT stamped_count AS n, stamped_traces AS traces FROM ${schema}.outbox_stamp($1, $2, $3, $4)`,
      [schema, BATCH, EVENTS_CHANNEL, tracingEnabled()],
    );
    return r.rows[0];
  };

  const send = async (q: Queryable): Promise<{ n: number }> => {
    const rows = await q.query<OutboxRow>(`SELECT ${outboxColumns()} FROM ${schema}.outbox WHERE published_at IS NULL ORDER BY created_at, id LIMIT ${BATCH}`);
    if (!rows.rows.length) return { n: 0 };
    const events = rows.rows.map(toRecord);
    if (tracingEnabled()) {
      await inMessagesSpan(
        spanName,
        SpanKind.PRODUCER,
        spanAttributes(events.length),
        events.map((e) => e.traceparent),
        () => publisher!.publish(events),
      );
    } else {
      await publisher!.publish(events);
    }
    await opts.afterPublish?.(events);
    // by the outbox's key (outbox_004_key.sql)
    await q.query(`UPDATE ${schema}.outbox SET published_at = now() WHERE (aggregate_id, id) IN (SELECT * FROM unnest($1::text[], $2::text[]))`, [
      events.map((e) => e.aggregateId),
      events.map((e) => e.id),
    ]);
    return { n: events.length };
  };

  const once = async (): Promise<boolean> => {
    const started = tracingEnabled() ? new Date() : undefined;
    // The embedded database is one process's (no other replica to keep out), and its transaction
    // holds every statement of the process: a send to Kafka, which waits out an absent broker,
    // runs outside one there
    const { n, traces }: { n: number; traces?: string[] | null } = !publisher
      ? await stamp()
      : db.kind === "pglite"
        ? await send(db)
        : await db.tx(async (q): Promise<{ n: number }> => {
            const lock = await q.query<{ ok: boolean }>(`SELECT pg_try_advisory_xact_lock(hashtext($1)) AS ok`, [`icv-outbox-relay:${schema}`]);
            return lock.rows[0].ok ? send(q) : { n: 0 };
          });
    // postgres transport: the batch is published once its stamps committed
    if (traces && started) recordMessagesSpan(spanName, SpanKind.PRODUCER, spanAttributes(n), traces, started);
    if (Date.now() - lastPrune > 3600_000) {
      lastPrune = Date.now();
      // the row holding the highest seq stays: the next stamp counts on from it
      await db.query(`DELETE FROM ${schema}.outbox WHERE published_at < $1 AND seq IS DISTINCT FROM (SELECT max(seq) FROM ${schema}.outbox)`, [
        new Date(Date.now() - RETENTION_MS),
      ]);
    }
    return n === BATCH;
  };

  const pump = startPump(`relay:${schema}`, once, config.EVENT_POLL_INTERVAL_MS, logger, config.EVENT_BATCH_WINDOW_MS);
  const unlisten = await db.listen(OUTBOX_CHANNEL, (s) => s === schema && pump.wake());
  const untrackLag = trackOutboxLag({ schema }, () => outboxLagSeconds(db, schema));
  return {
    wake: pump.wake,
    async stop() {
      untrackLag();
      await unlisten();
      await pump.stop();
      await publisher?.close?.();
    },
  };
}

/** Age in seconds of the oldest unpublished event of `<schema>.outbox` (0 when none waits), for icv_outbox_lag_seconds. */
async function outboxLagSeconds(db: Database, schema: string): Promise<number> {
  const r = await db.query<{ age: number | null }>(
    `SELECT extract(epoch FROM now() - min(created_at))::float8 AS age FROM ${schema}.outbox WHERE published_at IS NULL`,
  );
  return Math.max(0, r.rows[0]?.age ?? 0);
}

/** kafkajs is loaded only when KAFKA_BROKERS is set. */
async function connectKafkaPublisher(config: Config, logger: Logger): Promise<KafkaPublisher> {
  const { createKafka, KafkaPublisher } = await import("./kafka.ts");
  return KafkaPublisher.connect(createKafka(config, logger), config.KAFKA_TOPIC_PREFIX);
}
