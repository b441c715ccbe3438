// Kafka away, without a broker: consumers and the relay's producer reconnect forever with
// backoff, a start never waits on the broker, and the outbox rows stay pending until it is back.
import { EventEmitter } from "node:events";
import { describe, expect, it } from "vitest";
import { createLogger } from "../src/logger.ts";
import { keepConsuming, type ConsumerLike } from "../src/events/kafka-keep.ts";
import { KafkaPublisher } from "../src/events/kafka.ts";
import type { EventRecord } from "../src/events/event-log.ts";

const logger = createLogger({ level: "silent" });
const events = { CRASH: "crash", GROUP_JOIN: "join" };

/** A kafkajs consumer stand-in: connect fails while the broker is down; joins when run. */
class FakeConsumer implements ConsumerLike {
  readonly events = events;
  readonly bus = new EventEmitter();
  disconnected = false;
  constructor(private readonly broker: { up: boolean }) {}
  async connect() {
    if (!this.broker.up) throw new Error("KafkaJSConnectionError: broker down");
  }
  async disconnect() {
    this.disconnected = true;
  }
  on(event: string, listener: (e: { payload: { error?: Error; restart?: boolean } }) => void) {
    this.bus.on(event, listener);
    return () => void this.bus.off(event, listener);
  }
  join() {
    this.bus.emit(events.GROUP_JOIN, { payload: {} });
  }
}

const until = async (what: () => boolean) => {
  const end = Date.now() + 3_000;
  while (!what()) {
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 5));
  }
};

describe("keepConsuming", () => {
  it("keeps trying while the broker is away, and consumes once it is back", async () => {
    const broker = { up: false };
    const made: FakeConsumer[] = [];
    const kept = keepConsuming(
      () => (made.push(new FakeConsumer(broker)), made[made.length - 1]),
      async (c) => c.join(),
      { logger, maxBackoffMs: 20, name: "g" },
    );
    await until(() => made.length >= 3);
    expect(kept.up()).toBe(false);
    broker.up = true;
    await kept.joined;
    expect(kept.up()).toBe(true);
    expect(made.slice(0, -1).every((c) => c.disconnected)).toBe(true);
    await kept.close();
  });

  it("starts a new consumer when kafkajs gives one up (crash without restart), not when it restarts itself", async () => {
    const broker = { up: true };
    const made: FakeConsumer[] = [];
    const kept = keepConsuming(
      () => (made.push(new FakeConsumer(broker)), made[made.length - 1]),
      async (c) => c.join(),
      { logger, maxBackoffMs: 20, name: "g" },
    );
    await kept.joined;
    made[0].bus.emit(events.CRASH, { payload: { error: new Error("retriable"), restart: true } });
    await new Promise((r) => setTimeout(r, 50));
    expect(made).toHaveLength(1);
    made[0].bus.emit(events.CRASH, { payload: { error: new Error("fatal"), restart: false } });
    await until(() => made.length === 2 && kept.up());
    expect(made[0].disconnected).toBe(true);
    await kept.close();
    expect(made[1].disconnected).toBe(true);
  });

  it("closes at once while waiting for the broker", async () => {
    const kept = keepConsuming(
      () => new FakeConsumer({ up: false }),
      async () => undefined,
      { logger, maxBackoffMs: 60_000, name: "g" },
    );
    await new Promise((r) => setTimeout(r, 20));
    const at = Date.now();
    await kept.close();
    expect(Date.now() - at).toBeLessThan(500);
  });
});

describe("KafkaPublisher with the broker away", () => {
  const event: EventRecord = {
    id: "evt_1",
    aggregateType: "verification",
    aggregateId: "ver_1",
    eventType: "verification.created",
    tenantId: "ten_1",
    environment: "test",
    payload: {},
    createdAt: new Date(),
  };

  it("fails the batch (the relay keeps the rows pending) and reconnects on the next one", async () => {
    const broker = { up: false };
    const sent: unknown[] = [];
    let producers = 0;
    const kafka = {
      admin: () => ({
        connect: async () => {
          if (!broker.up) throw new Error("broker down");
        },
        disconnect: async () => undefined,
        listTopics: async () => [] as string[],
        createTopics: async () => true,
      }),
      producer: () => {
        producers++;
        return { connect: async () => undefined, disconnect: async () => undefined, sendBatch: async (b: unknown) => void sent.push(b) };
      },
    } as unknown as ConstructorParameters<typeof KafkaPublisher>[0];
    const p = new KafkaPublisher(kafka, "icv.");
    await expect(p.publish([event])).rejects.toThrow("broker down");
    expect(p.up()).toBe(false);
    await expect(p.publish([event])).rejects.toThrow("broker down");
    broker.up = true;
    await p.publish([event]);
    expect(p.up()).toBe(true);
    expect(sent).toHaveLength(1);
    expect(producers).toBe(1);
    await p.close();
  });
});
