// The kafka transport's own logic, without a broker: the wire mapping and when offsets are committed.
// (events.test.ts runs the full contract against a broker when KAFKA_BROKERS is set.)
import { describe, expect, it } from "vitest";
import { createLogger } from "../src/logger.ts";
import type { EventRecord } from "../src/events/event-log.ts";
import { fromKafkaMessage, handleKafkaBatch, messageHeaders, toKafkaMessage, topicName, traceparentHeader, type BatchDeps } from "../src/events/kafka.ts";

const event = (i: number, aggregateId = "ver_01A"): EventRecord => ({
  id: `evt_${String(i).padStart(26, "0")}`,
  aggregateType: "verification",
  aggregateId,
  eventType: "verification.status_changed",
  tenantId: "ten_01B",
  environment: i % 2 ? "live" : "test",
  payload: { status: "verified", nested: { n: i } },
  createdAt: new Date(Date.UTC(2026, 10, 22, 10, 0, 0, i)),
});

describe("kafka message mapping", () => {
  it("keys a message by aggregate id and round-trips every field", () => {
    const e = event(7, "ver_XYZ");
    const m = toKafkaMessage(e);
    expect(m.key).toBe("ver_XYZ");
    expect(m.headers).toEqual({ "event-id": e.id, "event-type": "verification.status_changed" });
    expect(fromKafkaMessage(Buffer.from(m.value))).toEqual(e);
    expect(topicName("icv.", "verification_request")).toBe("icv.verification_request");
  });

  it.each([
    ["null", null],
    ["not JSON", "{"],
    ["no id", JSON.stringify({ aggregate_type: "verification" })],
    ["bad environment", JSON.stringify({ ...JSON.parse(toKafkaMessage(event(1)).value), environment: "prod" })],
    ["bad created_at", JSON.stringify({ ...JSON.parse(toKafkaMessage(event(1)).value), created_at: "yesterday" })],
  ])("refuses a message with %s", (_, value) => {
    expect(() => fromKafkaMessage(value === null ? null : Buffer.from(value))).toThrow();
  });
});

describe("kafka trace context header", () => {
  const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

  it("writes an event's traceparent as a `traceparent` header, and no header for an event without one", () => {
    expect(messageHeaders({ ...event(1), traceparent: tp })).toEqual({
      "event-id": event(1).id,
      "event-type": "verification.status_changed",
      traceparent: tp,
    });
    expect(messageHeaders(event(1))).not.toHaveProperty("traceparent");
    expect(toKafkaMessage({ ...event(1), traceparent: tp }).headers.traceparent).toBe(tp);
    // the header only: the value is the same with or without it
    expect(toKafkaMessage({ ...event(1), traceparent: tp }).value).toBe(toKafkaMessage(event(1)).value);
  });

  it("reads it back as kafkajs hands headers (Buffers, a string, a list), and nothing from an absent, empty or oversized one", () => {
    expect(traceparentHeader({ traceparent: Buffer.from(tp) })).toBe(tp);
    expect(traceparentHeader({ traceparent: tp })).toBe(tp);
    expect(traceparentHeader({ traceparent: [Buffer.from(tp), Buffer.from("second")] })).toBe(tp);
    expect(traceparentHeader({ "event-id": Buffer.from("evt_1") })).toBeUndefined();
    expect(traceparentHeader(undefined)).toBeUndefined();
    expect(traceparentHeader({ traceparent: Buffer.alloc(0) })).toBeUndefined();
    expect(traceparentHeader({ traceparent: Buffer.from("x".repeat(513)) })).toBeUndefined();
    // garbage of a sane size is passed on: parseTraceparent ignores it where it is used
    expect(traceparentHeader({ traceparent: Buffer.from("garbage") })).toBe("garbage");
  });

  it("round-trips through a message: the event from the value, its traceparent from the headers", () => {
    const e = { ...event(3), traceparent: tp };
    const m = toKafkaMessage(e);
    const received = Object.fromEntries(Object.entries(m.headers).map(([k, v]) => [k, Buffer.from(v)]));
    expect(fromKafkaMessage(Buffer.from(m.value), received)).toEqual(e);
    expect(fromKafkaMessage(Buffer.from(m.value))).not.toHaveProperty("traceparent");
  });

  it("hands the header's traceparent to the consumer with each event of a batch", async () => {
    const { deps, applied } = fakeDeps();
    const b = batchOf(0, 2);
    (b.messages[0] as { headers?: Record<string, Buffer> }).headers = { traceparent: Buffer.from(tp) };
    await handleKafkaBatch(b, deps);
    expect(applied[0].map((x) => x.traceparent)).toEqual([tp, undefined]);
  });
});

function fakeDeps(overrides: Partial<BatchDeps> = {}) {
  const calls: string[] = [];
  const applied: EventRecord[][] = [];
  const deps: BatchDeps = {
    async apply(events) {
      calls.push(`apply:${events.length}`);
      applied.push(events);
      return events;
    },
    async commit(offsets) {
      calls.push(`commit:${offsets.map((o) => `${o.topic}/${o.partition}@${o.offset}`).join(",")}`);
    },
    afterCommit: (events) => void calls.push(`after:${events.length}`),
    running: () => true,
    heartbeat: async () => void calls.push("heartbeat"),
    logger: createLogger({ level: "silent" }),
    ...overrides,
  };
  return { deps, calls, applied };
}

const batchOf = (from: number, n: number, offset0 = 100) => ({
  topic: "icv.verification",
  partition: 3,
  messages: Array.from({ length: n }, (_, i) => ({
    offset: String(offset0 + i),
    value: Buffer.from(toKafkaMessage(event(from + i)).value),
  })),
});

describe("kafka batch handling", () => {
  it("commits the offset after the last message only once the batch was applied", async () => {
    const { deps, calls, applied } = fakeDeps();
    await handleKafkaBatch(batchOf(0, 3), deps);
    expect(calls).toEqual(["apply:3", "commit:icv.verification/3@103", "after:3", "heartbeat"]);
    expect(applied[0].map((e) => e.payload.nested)).toEqual([{ n: 0 }, { n: 1 }, { n: 2 }]);
  });

  it("commits nothing when applying fails, so the batch is read again", async () => {
    const { deps, calls } = fakeDeps({
      apply: async () => {
        throw new Error("database down");
      },
    });
    await expect(handleKafkaBatch(batchOf(0, 3), deps)).rejects.toThrow("database down");
    expect(calls.some((c) => c.startsWith("commit"))).toBe(false);
  });

  it("commits nothing when the process dies after applying (the crash seam)", async () => {
    const { deps, calls } = fakeDeps({
      beforeAck: () => {
        throw new Error("killed");
      },
    });
    await expect(handleKafkaBatch(batchOf(0, 2), deps)).rejects.toThrow("killed");
    expect(calls).toEqual(["apply:2"]);
  });

  it("passes over an undecodable message but still commits past it", async () => {
    const { deps, calls } = fakeDeps();
    const b = batchOf(0, 2);
    b.messages.splice(1, 0, { offset: "101", value: Buffer.from("garbage") });
    b.messages[2].offset = "102";
    await handleKafkaBatch(b, deps);
    expect(calls.slice(0, 2)).toEqual(["apply:2", "commit:icv.verification/3@103"]);
  });

  it("applies and commits a large batch chunk by chunk, and stops between chunks when the consumer stops", async () => {
    const { deps, calls } = fakeDeps();
    await handleKafkaBatch(batchOf(0, 1200, 0), deps);
    expect(calls.filter((c) => c.startsWith("commit"))).toEqual([
      "commit:icv.verification/3@500",
      "commit:icv.verification/3@1000",
      "commit:icv.verification/3@1200",
    ]);

    let chunks = 0;
    const stopping = fakeDeps({ running: () => chunks++ < 1 });
    await handleKafkaBatch(batchOf(0, 1200, 0), stopping.deps);
    expect(stopping.calls.filter((c) => c.startsWith("commit"))).toEqual(["commit:icv.verification/3@500"]);
  });

  it("uses offsets beyond 2^53 exactly", async () => {
    const { deps, calls } = fakeDeps();
    await handleKafkaBatch({ topic: "t", partition: 0, messages: [{ offset: "9007199254740993", value: Buffer.from(toKafkaMessage(event(1)).value) }] }, deps);
    expect(calls[1]).toBe("commit:t/0@9007199254740994");
  });
});
