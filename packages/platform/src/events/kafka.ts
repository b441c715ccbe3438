import { hostname } from "node:os";
import { randomUUID } from "node:crypto";
import { Kafka, logLevel, type Consumer, type Producer, type TopicPartitionOffsetAndMetadata } from "kafkajs";
import type { Config } from "../config.ts";
import type { Logger } from "../logger.ts";
import type { EnvName } from "../scope.ts";
import { applyEvents, startConsumedPruning } from "./consumer.ts";
import type { BroadcastOptions, ConsumerOptions, EventLog, EventRecord, Subscription } from "./event-log.ts";
import { TOPIC_SOURCES } from "./topics.ts";

const CHUNK = 500;

/** The Kafka topic of an aggregate family. */
export const topicName = (prefix: string, family: string) => `${prefix}${family}`;

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
    headers: { "event-id": e.id, "event-type": e.eventType },
  };
}

/** Decodes a message written by toKafkaMessage; throws on anything else. */
export function fromKafkaMessage(value: Buffer | string | null): EventRecord {
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
  return {
    id: str("id"),
    aggregateType: str("aggregate_type"),
    aggregateId: str("aggregate_id"),
    eventType: str("event_type"),
    tenantId: str("tenant_id"),
    environment: environment as EnvName,
    payload: (v.payload ?? {}) as Record<string, unknown>,
    createdAt,
  };
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
        events.push(fromKafkaMessage(m.value));
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
export async function ensureTopics(kafka: Kafka, prefix: string): Promise<void> {
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

/** The relay's side: an idempotent producer writing with acks from all in-sync replicas. */
export class KafkaPublisher {
  private constructor(
    private readonly producer: Producer,
    private readonly prefix: string,
  ) {}

  static async connect(kafka: Kafka, prefix: string): Promise<KafkaPublisher> {
    await ensureTopics(kafka, prefix);
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    return new KafkaPublisher(producer, prefix);
  }

  async publish(events: EventRecord[]): Promise<void> {
    const byTopic = new Map<string, ReturnType<typeof toKafkaMessage>[]>();
    for (const e of events) {
      const t = topicName(this.prefix, e.aggregateType);
      byTopic.set(t, [...(byTopic.get(t) ?? []), toKafkaMessage(e)]);
    }
    await this.producer.sendBatch({ acks: -1, topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })) });
  }

  close(): Promise<void> {
    return this.producer.disconnect();
  }
}

/**
 * The kafka transport: consumer groups with offsets committed only after the batch was applied
 * (and its ids recorded) in the consumer's database; broadcast subscriptions use a group of
 * their own per process, starting at the latest offset.
 */
export class KafkaEventLog implements EventLog {
  readonly transport = "kafka";
  private readonly consumers = new Set<Consumer>();
  private topicsReady: Promise<void> | undefined;

  constructor(
    private readonly kafka: Kafka,
    private readonly prefix: string,
    private readonly logger: Logger,
  ) {}

  private async start(groupId: string, topics: string[], fromBeginning: boolean): Promise<Consumer> {
    this.topicsReady ??= ensureTopics(this.kafka, this.prefix);
    await this.topicsReady;
    const consumer = this.kafka.consumer({ groupId });
    await consumer.connect();
    await consumer.subscribe({ topics: topics.map((t) => topicName(this.prefix, t)), fromBeginning });
    this.consumers.add(consumer);
    return consumer;
  }

  private subscription(consumer: Consumer, also?: { stop(): Promise<void> }): Subscription {
    return {
      close: async () => {
        await also?.stop();
        this.consumers.delete(consumer);
        await consumer.disconnect();
      },
    };
  }

  async consume(opts: ConsumerOptions): Promise<Subscription> {
    const consumer = await this.start(`${this.prefix}${opts.group}`, opts.topics, true);
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: async ({ batch, heartbeat, resolveOffset, isRunning, isStale }) => {
        await handleKafkaBatch(batch, {
          apply: (events) => opts.db.tx((q) => applyEvents(q, opts, events)),
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
    });
    return this.subscription(consumer, startConsumedPruning(opts, this.logger));
  }

  async broadcast(opts: BroadcastOptions): Promise<Subscription> {
    const group = `${this.prefix}broadcast-${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
    const consumer = await this.start(group, opts.topics, false);
    // "from now on" starts once the group owns its partitions
    const joined = new Promise<void>((resolve) => consumer.on(consumer.events.GROUP_JOIN, () => resolve()));
    await consumer.run({
      eachMessage: async ({ message }) => {
        let e: EventRecord;
        try {
          e = fromKafkaMessage(message.value);
        } catch (err) {
          this.logger.error({ err }, "undecodable event skipped");
          return;
        }
        try {
          opts.onEvent(e);
        } catch (err) {
          this.logger.error({ err, event_id: e.id }, "event listener failed");
        }
      },
    });
    await joined;
    return this.subscription(consumer);
  }

  async close(): Promise<void> {
    await Promise.all([...this.consumers].map((c) => c.disconnect()));
    this.consumers.clear();
  }
}
