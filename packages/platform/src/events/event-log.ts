import type { Database, Queryable } from "../database.ts";
import type { EnvName } from "../scope.ts";

/** One published outbox row, as every consumer sees it whatever the transport. */
export interface EventRecord {
  /** `evt_…`; the idempotency key of every consumer. */
  id: string;
  /** The aggregate family, which is also the topic: `verification`, `proof`, `tenant`, … */
  aggregateType: string;
  aggregateId: string;
  eventType: string;
  tenantId: string;
  environment: EnvName;
  payload: Record<string, unknown>;
  createdAt: Date;
  /**
   * The W3C traceparent of the span that wrote the event (tracing on in the writer; absent
   * otherwise, and while tracing is off in this process): consumers handle it in a span of that
   * trace. Only ever read through parseTraceparent, which ignores anything malformed.
   */
  traceparent?: string;
}

/** A consumer group: each event of its topics is handled by one member of the group. */
export interface ConsumerOptions {
  /** Group name, stable across restarts and replicas (e.g. `webhook-deliveries`). */
  group: string;
  /** Aggregate families to read (see TOPIC_SOURCES). */
  topics: string[];
  /**
   * The consumer's own database and schema. The schema holds `event_consumed` and
   * `event_cursors` (see consumerTablesSql); an event's id is recorded there in the same
   * transaction as the handler's writes, so an event redelivered after a crash is skipped.
   */
  db: Database;
  schema: string;
  /**
   * Applies one event. Runs inside a transaction on `db` (write through `q`); throwing rolls the
   * event back and it is retried later. Never called twice for one event id.
   * (Give this or handleBatch.)
   */
  handle?(q: Queryable, event: EventRecord): Promise<void>;
  /**
   * Applies a batch of events (oldest first, each id once, never one applied before) in one
   * transaction on `db`, so a consumer reads and writes once per batch instead of once per event.
   * Used instead of `handle` when given; the same guarantees.
   */
  handleBatch?(q: Queryable, events: EventRecord[]): Promise<void>;
  /**
   * The event types the group acts on (default: every type of its topics). Only these are recorded
   * and handed to the handler; a batch holding none of them is passed over without a transaction
   * (postgres: the group's cursor row catches up with its next claim, or at least every
   * SKIPPED_CURSOR_MOVE_MS; after a restart, what was passed over since is read and passed over again).
   */
  eventTypes?: readonly string[];
  /**
   * Narrows a batch (of the group's event types) to the events the handler would act on, by a read
   * outside the batch's transaction: e.g. only events of tenants with a webhook endpoint. The others
   * are passed over as events of other types are: not recorded, and no transaction when none is left.
   * The handler must do nothing with an event this leaves out, whenever it runs: a re-read after a
   * restart asks again, so an event is acted on once, by whichever answer sees it relevant.
   */
  relevant?(events: EventRecord[]): Promise<EventRecord[]>;
  /** Called after a batch committed (e.g. to wake a worker that acts on what handle wrote). */
  afterCommit?(events: EventRecord[]): void;
  /**
   * Crash-test seam: runs after a batch was handled and before its position is acknowledged
   * (postgres: inside the transaction; kafka: after it committed, before the offset commit).
   */
  beforeAck?(events: EventRecord[]): void | Promise<void>;
}

/** A fan-out subscription: this process receives every event published after it started. */
export interface BroadcastOptions {
  topics: string[];
  /** Names the subscriber in its trace spans (`process <name>`; default `process <family> broadcast`). */
  name?: string;
  onEvent(event: EventRecord): void;
}

export interface Subscription {
  close(): Promise<void>;
}

/** The event transport: `postgres` (outbox tables + LISTEN/NOTIFY) or `kafka`. */
export interface EventLog {
  readonly transport: "postgres" | "kafka";
  /** kafka: every consumer of this process is connected and in its group (false while the broker is away). */
  up?(): boolean;
  consume(opts: ConsumerOptions): Promise<Subscription>;
  broadcast(opts: BroadcastOptions): Promise<Subscription>;
  close(): Promise<void>;
}
