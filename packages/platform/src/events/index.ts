import type { Config } from "../config.ts";
import type { Logger } from "../logger.ts";
import type { EventLog } from "./event-log.ts";
import { PostgresEventLog } from "./postgres.ts";

export * from "./event-log.ts";
export * from "./catalogue.ts";
export { TOPIC_SOURCES } from "./topics.ts";
export { startOutboxRelay, type OutboxRelay, type OutboxRelayOptions } from "./relay.ts";
export { startPump, type Pump } from "./pump.ts";

/** The configured event transport: kafka when KAFKA_BROKERS is set, else the outbox tables of Postgres. */
export async function createEventLog(config: Config, logger: Logger): Promise<EventLog> {
  const log = logger.child({ component: "event-log" });
  if (config.KAFKA_BROKERS) {
    // kafkajs is loaded only when it is used
    const { createKafka, KafkaEventLog } = await import("./kafka.ts");
    return new KafkaEventLog(createKafka(config, log), config.KAFKA_TOPIC_PREFIX, log, config.RETRY_BACKOFF_MAX_MS);
  }
  return new PostgresEventLog(config, log);
}
