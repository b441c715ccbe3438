import { hostname } from "node:os";
import { randomUUID } from "node:crypto";
import { Kafka, logLevel, type Consumer, type IHeaders, type Producer, type TopicPartitionOffsetAndMetadata } from "kafkajs";
import type { Config } from "../config.ts";
import type { Logger } from "../logger.ts";
import type { EnvName } from "../scope.ts";
import { actionable, applyEvents, startConsumedPruning } from "./consumer.ts";
import type { BroadcastOptions, ConsumerOptions, EventLog, EventRecord, Subscription } from "./event-log.ts";
import { TOPIC_SOURCES } from "./topics.ts";
import { keepConsuming, type KeptConsumer } from "./kafka-keep.ts";
import { processSpan } from "./spans.ts";
import { tracingEnabled } from "../tracing.ts";

const CHUNK = 500;

/** The Kafka topic of an aggregate family. */
export const topicName = (prefix: string, family: string) => `${prefix}${family}`;

/**
 * A message's headers: its event's id and type, and the W3C `traceparent` it was written under
 * (only when it has one: tracing off, nothing is added).
 */
export function messageHeaders(e: Pick<EventRecord, "id" | "eventType" | "traceparent">): Record<string, string> {
  const headers: Record<string, string> = { "event-id": e.id, "event-type": e.eventType };
  if (e.traceparent) headers.traceparent = e.traceparent;
  return headers;
}

/**
 * The `traceparent` header of a received message (kafkajs hands header values as Buffers, one or
 * a list of them), or undefined: absent, empty or oversized. Its syntax is checked where it is
 * used (tracing.ts parseTraceparent): a malformed one only leaves the handling untraced.
 */
export function traceparentHeader(headers: IHeaders | undefined): string | undefined {
  let v = headers?.traceparent;
  if (Array.isArray(v)) v = v[0];
  if (v === undefined || v === null) return undefined;
  const s = typeof v === "string" ? v : Buffer.isBuffer(v) ? v.toString("latin1") : undefined;
  return s && s.length <= 512 ? s : undefined;
}

/** The wire form of an event: keyed by aggregate id, so one aggregate's events share a partition and stay in order. */
export function toKafkaMessage(e: EventRecord) {
  return {
    key: e.aggregateId,
    value: JSON.stringify({
      id: e.id,
      aggregate_type: e.aggregateType,
      aggregate_id: e.aggregateId,
      event_type: e.eventType,
      tenant_id: e.tenantId,
      environment: e.environment,
      payload: e.payload,
      created_at: e.createdAt.toISOString(),
    }),
    headers: messageHeaders(e),
  };
}

/** Decodes a message written by toKafkaMessage (the event from its value, its traceparent from its headers); throws on anything else. */
export function fromKafkaMessage(value: Buffer | string | null, headers?: IHeaders): EventRecord {
  if (value === null) throw new Error("empty message");
  const v = JSON.parse(value.toString()) as Record<string, unknown>;
  const str = (k: string) => {
    if (typeof v[k] !== "string" || !v[k]) throw new Error(`message without ${k}`);
    return v[k] as string;
  };
  const environment = str("environment");
  if (environment !== "live" && environment !== "test") throw new Error("message with a bad environment");
  const createdAt = new Date(str("created_at"));
  if (Number.isNaN(createdAt.getTime())) throw new Error("message with a bad created_at");
  const e: EventRecord = {
    id: str("id"),
    aggregateType: str("aggregate_type"),
    aggregateId: str("aggregate_id"),
    eventType: str("event_type"),
    tenantId: str("tenant_id"),
    environment: environment as EnvName,
    payload: (v.payload ?? {}) as Record<string, unknown>,
    createdAt,
  };
  const traceparent = headers && traceparentHeader(headers);
  if (traceparent) e.traceparent = traceparent;
  return e;
}

export interface BatchDeps {
  /** Applies events idempotently (in the consumer's database); answers those handled now. */
  apply(events: EventRecord[]): Promise<EventRecord[]>;
  /** Commits consumer-group offsets (the next offset to read). */
  commit(offsets: TopicPartitionOffsetAndMetadata[]): Promise<void>;
  beforeAck?(events: EventRecord[]): void | Promise<void>;
  afterCommit?(events: EventRecord[]): void;
  /** False once the consumer is stopping or the batch is stale (rebalanced away). */
  running(): boolean;
  heartbeat(): Promise<void>;
  logger: Logger;
}

interface BatchMessage {
  offset: string;
  value: Buffer | null;
  headers?: IHeaders;
}

/**
 * Handles one fetched batch of a partition, chunk by chunk: apply (idempotent, committed in the
 * consumer's database), then commit the offset after the chunk's last message. A crash between
 * the two redelivers the chunk and the apply step skips what it already handled. An undecodable
 * message is logged and passed over (it can never succeed).
 */
export async function handleKafkaBatch(batch: { topic: string; partition: number; messages: BatchMessage[] }, deps: BatchDeps): Promise<void> {
  for (let i = 0; i < batch.messages.length; i += CHUNK) {
    if (!deps.running()) return;
    const chunk = batch.messages.slice(i, i + CHUNK);
    const events: EventRecord[] = [];
    for (const m of chunk) {
      try {
        events.push(fromKafkaMessage(m.value, m.headers));
      } catch (err) {
        deps.logger.error({ err, topic: batch.topic, partition: batch.partition, offset: m.offset }, "undecodable event skipped");
      }
    }
    const handled = await deps.apply(events);
    await deps.beforeAck?.(handled);
    const next = (BigInt(chunk[chunk.length - 1].offset) + 1n).toString();
    await deps.commit([{ topic: batch.topic, partition: batch.partition, offset: next }]);
    if (handled.length) deps.afterCommit?.(handled);
    await deps.heartbeat();
  }
}

/** A kafkajs client whose log lines go to pino. */
export function createKafka(config: Config, logger: Logger): Kafka {
  const log = logger.child({ component: "kafka" });
  return new Kafka({
    clientId: config.KAFKA_CLIENT_ID,
    brokers: config.KAFKA_BROKERS ?? [],
    logLevel: logLevel.WARN,
    logCreator: () => (entry) => {
      const { message, ...extra } = entry.log;
      const fields = { ...extra, namespace: entry.namespace };
      if (entry.level <= logLevel.ERROR) log.error(fields, message);
      else if (entry.level === logLevel.WARN) log.warn(fields, message);
      else log.debug(fields, message);
    },
  });
}

/** Creates every family's topic (missing ones only), so consumers can subscribe before the first event. */
export async function ensureTopics(kafka: Pick<Kafka, "admin">, prefix: string): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const missing = Object.keys(TOPIC_SOURCES)
      .map((f) => topicName(prefix, f))
      .filter((t) => !existing.has(t));
    if (missing.length) await admin.createTopics({ topics: missing.map((topic) => ({ topic })), waitForLeaders: true });
  } finally {
    await admin.disconnect();
  }
}

/**
 * The relay's side: an idempotent producer writing with acks from all in-sync replicas. It
 * connects on first use and again after a failure, so a broker away at start or later only
 * leaves rows in the outbox (the relay retries them) and never stops the service.
 */
export class KafkaPublisher {
  private producer: Producer | undefined;
  private connecting: Promise<Producer> | undefined;
  private ok = false;

  constructor(
    private readonly kafka: Pick<Kafka, "producer" | "admin">,
    private readonly prefix: string,
  ) {}

  static async connect(kafka: Kafka, prefix: string): Promise<KafkaPublisher> {
    return new KafkaPublisher(kafka, prefix);
  }

  /** The last publish succeeded. */
  up(): boolean {
    return this.ok;
  }

  private ready(): Promise<Producer> {
    this.connecting ??= (async () => {
      await ensureTopics(this.kafka, this.prefix);
      const producer = this.kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
      await producer.connect();
      this.producer = producer;
      return producer;
    })();
    return this.connecting;
  }

  async publish(events: EventRecord[]): Promise<void> {
    const byTopic = new Map<string, ReturnType<typeof toKafkaMessage>[]>();
    for (const e of events) {
      const t = topicName(this.prefix, e.aggregateType);
      byTopic.set(t, [...(byTopic.get(t) ?? []), toKafkaMessage(e)]);
    }
    try {
      const producer = await this.ready();
      await producer.sendBatch({ acks: -1, topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })) });
      this.ok = true;
    } catch (e) {
      // start over on the next batch with a new connection; the rows stay pending in the outbox
      this.ok = false;
      const p = this.producer;
      this.producer = undefined;
      this.connecting = undefined;
      await p?.disconnect().catch(() => undefined);
      throw e;
    }
  }

  async close(): Promise<void> {
    const p = this.producer ?? (await this.connecting?.catch(() => undefined));
    await p?.disconnect();
  }
}

/**
 * The kafka transport: consumer groups with offsets committed only after the batch was applied
 * (and its ids recorded) in the consumer's database; broadcast subscriptions use a group of
 * their own per process, starting at the latest offset. Consumers reconnect forever with
 * backoff (keepConsuming): a broker away at start or later delays events, never a start.
 */
export class KafkaEventLog implements EventLog {
  readonly transport = "kafka";
  private readonly kept = new Set<KeptConsumer>();
  private topicsReady: Promise<void> | undefined;

  constructor(
    private readonly kafka: Kafka,
    private readonly prefix: string,
    private readonly logger: Logger,
    private readonly maxBackoffMs = 5_000,
  ) {}

  /** Every consumer of this process has joined its group (for /health). */
  up(): boolean {
    return [...this.kept].every((k) => k.up());
  }

  private keep(groupId: string, topics: string[], fromBeginning: boolean, run: (c: Consumer) => Promise<void>): KeptConsumer {
    const kept = keepConsuming(
      () => this.kafka.consumer({ groupId }),
      async (consumer) => {
        this.topicsReady ??= ensureTopics(this.kafka, this.prefix);
        await this.topicsReady.catch((e) => {
          this.topicsReady = undefined;
          throw e;
        });
        await consumer.subscribe({ topics: topics.map((t) => topicName(this.prefix, t)), fromBeginning });
        await run(consumer);
      },
      { logger: this.logger, maxBackoffMs: this.maxBackoffMs, name: groupId },
    );
    this.kept.add(kept);
    return kept;
  }

  private subscription(kept: KeptConsumer, also?: { stop(): Promise<void> }): Subscription {
    return {
      close: async () => {
        await also?.stop();
        this.kept.delete(kept);
        await kept.close();
      },
    };
  }

  async consume(opts: ConsumerOptions): Promise<Subscription> {
    const kept = this.keep(`${this.prefix}${opts.group}`, opts.topics, true, (consumer) =>
      consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        eachBatch: async ({ batch, heartbeat, resolveOffset, isRunning, isStale }) => {
          await handleKafkaBatch(batch, {
            apply: async (events) => {
              const taken = await actionable(opts, events);
              return taken.length ? opts.db.tx((q) => applyEvents(q, opts, taken, "kafka")) : [];
            },
            commit: async (offsets) => {
              await consumer.commitOffsets(offsets);
              resolveOffset((BigInt(offsets[0].offset) - 1n).toString());
            },
            beforeAck: opts.beforeAck,
            afterCommit: opts.afterCommit,
            running: () => isRunning() && !isStale(),
            heartbeat,
            logger: this.logger,
          });
        },
      }),
    );
    return this.subscription(kept, startConsumedPruning(opts, this.logger));
  }

  async broadcast(opts: BroadcastOptions): Promise<Subscription> {
    const group = `${this.prefix}broadcast-${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
    const kept = this.keep(group, opts.topics, false, (consumer) =>
      consumer.run({
        eachMessage: async ({ message }) => {
          let e: EventRecord;
          try {
            e = fromKafkaMessage(message.value, message.headers);
          } catch (err) {
            this.logger.error({ err }, "undecodable event skipped");
            return;
          }
          if (tracingEnabled()) processSpan({ subscriber: opts.name }, "kafka", [e], () => this.deliver(opts, e));
          else this.deliver(opts, e);
        },
      }),
    );
    // "from now on" starts once the group owns its partitions; a broker that is away does not hold up the start
    await Promise.race([kept.joined, new Promise((r) => setTimeout(r, Math.max(this.maxBackoffMs, 10_000)).unref())]);
    return this.subscription(kept);
  }

  /** Hands one event to a broadcast subscriber; its failure is logged, never thrown. */
  private deliver(opts: BroadcastOptions, e: EventRecord): void {
    try {
      opts.onEvent(e);
    } catch (err) {
      this.logger.error({ err, event_id: e.id }, "event listener failed");
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.kept].map((k) => k.close()));
    this.kept.clear();
  }
}
