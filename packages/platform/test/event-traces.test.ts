// The event pipeline in the writer's trace, on every transport (postgres always, kafka when
// KAFKA_BROKERS points at a broker): an event appended under a span stores its traceparent (none
// with tracing off), the relay publishes in a PRODUCER span, each consumer and broadcast subscriber
// handles in a CONSUMER span of that trace (linked to each trace when a batch mixes them), the
// handler's log lines carry the trace id, and a malformed traceparent never stops consumption.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { context, SpanKind, trace, type Span } from "@opentelemetry/api";
import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  appendEvent,
  appendEvents,
  createEventLog,
  createLogger,
  migrate,
  openServiceDatabase,
  outboxMigrations,
  parseConfig,
  startOutboxRelay,
  startTracing,
  writeWithEvents,
  type Config,
  type Database,
  type EventLog,
  type EventRecord,
  type OutboxEvent,
  type OutboxRelay,
  type Queryable,
  type Tracing,
} from "../src/index.ts";
import { activeTraceparent, parseTraceparent } from "../src/tracing.ts";
import { maybeFreshPostgres, type FreshPostgres } from "../../../test/support/fresh-postgres.ts";
import { waitFor } from "../../../test/support/expect-error.ts";
import { lineCollector } from "./support/log-lines.ts";

const root = path.resolve(import.meta.dirname, "../../..");
const MIGRATIONS = (svc: string) => path.join(root, "services", svc, "migrations");
const KAFKA = process.env.KAFKA_BROKERS;
const log = lineCollector();
const logger = createLogger({ level: "info", destination: log });

describe("traceparent parsing (stored in outbox rows and Kafka headers)", () => {
  it("reads a W3C traceparent, and nothing from anything else", () => {
    const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    expect(parseTraceparent(tp)).toEqual({
      traceId: "0af7651916cd43dd8448eb211c80319c",
      spanId: "b7ad6b7169203331",
      traceFlags: 1,
      isRemote: true,
    });
    expect(parseTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00")?.traceFlags).toBe(0);
    // a later version may append fields
    expect(parseTraceparent("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-later")?.spanId).toBe("b7ad6b7169203331");
    for (const bad of [
      null,
      undefined,
      "",
      "garbage",
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
      "00-00000000000000000000000000000000-b7ad6b7169203331-01",
      "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
      "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
      "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra",
      `00-${"a".repeat(32)}-${"b".repeat(16)}-01${" ".repeat(600)}`,
    ]) {
      expect(parseTraceparent(bad), String(bad)).toBeUndefined();
    }
  });
});

interface Rig {
  config: Config;
  source: Database;
  sink: Database;
  relay?: OutboxRelay;
  log: EventLog;
  fresh?: FreshPostgres;
  dataDir: string;
}

async function setup(transport: "postgres" | "kafka", opts: { sourceOutbox?: boolean } = {}): Promise<Rig> {
  const dataDir = mkdtempSync(path.join(tmpdir(), "icv-event-traces-"));
  const fresh = await maybeFreshPostgres();
  const config = parseConfig({
    DATA_DIR: dataDir,
    DATABASE_URL: fresh?.url,
    EVENT_POLL_INTERVAL_MS: "60000",
    ...(transport === "kafka" ? { KAFKA_BROKERS: KAFKA, KAFKA_TOPIC_PREFIX: `icv-test-${randomBytes(4).toString("hex")}.` } : {}),
  });
  // as the services open them: their own migrations, then the platform's outbox DDL
  const source = await openServiceDatabase(config, "verification", MIGRATIONS("verification"), logger, {
    outbox: opts.sourceOutbox ?? true,
  });
  const sink = await openServiceDatabase(config, "webhook", MIGRATIONS("webhook"), logger, { outbox: true });
  await sink.exec(
    `CREATE TABLE webhook.effects (n serial PRIMARY KEY, event_id text NOT NULL, aggregate_id text NOT NULL, grp text NOT NULL, traceparent text)`,
  );
  // the relay runs in the source's service, whose schema is migrated first (no relay before then)
  const relay = opts.sourceOutbox === false ? undefined : await startOutboxRelay({ config, db: source, schema: "verification", logger });
  return { config, source, sink, relay, log: await createEventLog(config, logger), fresh, dataDir };
}

async function teardown(r: Rig | undefined) {
  if (!r) return;
  await r.log.close();
  await r.relay?.stop();
  await r.source.close();
  await r.sink.close();
  await r.fresh?.drop();
  rmSync(r.dataDir, { recursive: true, force: true });
}

let n = 0;
const event = (aggregateId = "ver_traced", k = n++): OutboxEvent => ({
  aggregateType: "verification",
  aggregateId,
  eventType: "verification.status_changed",
  tenantId: "ten_test",
  environment: "test",
  payload: { k },
});

/** What group `grp` handled (of aggregate `aggregateId` only, when given: a new group also reads the earlier tests' events). */
const effects = async (r: Rig, grp: string, aggregateId?: string) =>
  (
    await r.sink.query<{ event_id: string; traceparent: string | null }>(
      `SELECT event_id, traceparent FROM webhook.effects WHERE grp = $1 AND ($2::text IS NULL OR aggregate_id = $2) ORDER BY n`,
      [grp, aggregateId ?? null],
    )
  ).rows;

/** A handler recording each event (and the traceparent it came with) and logging a line. */
const recorder = (grp: string) => async (q: Queryable, events: EventRecord[]) => {
  for (const e of events) {
    await q.query(`INSERT INTO webhook.effects (event_id, aggregate_id, grp, traceparent) VALUES ($1, $2, $3, $4)`, [
      e.id,
      e.aggregateId,
      grp,
      e.traceparent ?? null,
    ]);
    logger.info({ event_id: e.id, aggregate_id: e.aggregateId, grp }, "handled");
  }
};

const outboxTraceparents = async (r: Rig, ids: string[]) =>
  (await r.source.query<{ id: string; traceparent: string | null }>(`SELECT id, traceparent FROM verification.outbox WHERE id = ANY($1) ORDER BY id`, [ids]))
    .rows;

/** Runs fn inside a new active span (a request's), answering the span and fn's answer. */
async function underSpan<T>(name: string, fn: () => Promise<T>): Promise<{ span: Span; out: T }> {
  const span = trace.getTracer("test").startSpan(name);
  try {
    const out = await context.with(trace.setSpan(context.active(), span), fn);
    return { span, out };
  } finally {
    span.end();
  }
}

const TRANSPORTS = [
  { name: "postgres" as const, skip: false },
  { name: "kafka" as const, skip: !KAFKA },
];

for (const t of TRANSPORTS) {
  describe.skipIf(t.skip)(
    `the event pipeline's traces over ${t.name}${t.skip ? " (skipped: set KAFKA_BROKERS=host:port to run against a broker)" : ""}`,
    () => {
      const exporter = new InMemorySpanExporter();
      let tracing: Tracing | undefined;
      let r: Rig | undefined;
      beforeAll(async () => {
        r = await setup(t.name);
      });
      afterAll(async () => {
        await teardown(r);
        await tracing?.shutdown();
      });

      const spans = () => exporter.getFinishedSpans();
      const named = (name: string) => spans().filter((s) => s.name === name);

      it("tracing off: events are appended with a NULL traceparent and consumed without one", async () => {
        const rig = r!;
        await rig.log.consume({ group: "off", topics: ["verification"], db: rig.sink, schema: "webhook", handleBatch: recorder("off") });
        const ids = await rig.source.tx(async (q) => {
          const one = await appendEvent(q, "verification", event());
          await appendEvents(q, "verification", [event(), event()]);
          await writeWithEvents(q, "verification", "SELECT 1 AS x", [], [event()], new Date());
          return one;
        });
        await waitFor(async () => (await effects(rig, "off")).length >= 4, 10_000);
        const rows = (await rig.source.query<{ traceparent: string | null }>(`SELECT traceparent FROM verification.outbox`)).rows;
        expect(rows.length).toBeGreaterThanOrEqual(4);
        expect(rows.every((x) => x.traceparent === null)).toBe(true);
        expect(ids).toMatch(/^evt_/);
        expect((await effects(rig, "off")).every((x) => x.traceparent === null)).toBe(true);
        expect(
          log
            .records()
            .filter((x) => x.msg === "handled")
            .every((x) => !("trace_id" in x)),
        ).toBe(true);
      });

      describe("tracing on", () => {
        beforeAll(async () => {
          tracing = await startTracing({ serviceName: "icv-test", exporter });
        });

        it("an event written under a span stores its traceparent; the relay and the consumers continue that trace, and the handler's log lines name it", async () => {
          const rig = r!;
          exporter.reset();
          log.lines.length = 0;
          await rig.log.consume({
            group: "traced",
            topics: ["verification"],
            db: rig.sink,
            schema: "webhook",
            handleBatch: recorder("traced"),
          });
          const seen: EventRecord[] = [];
          await rig.log.broadcast({ topics: ["verification"], onEvent: (e) => void seen.push(e) });
          await rig.log.broadcast({ topics: ["verification"], name: "named subscriber", onEvent: () => undefined });
          // one request's events, in one transaction: appendEvent, appendEvents, writeWithEvents
          const { span, out: tp } = await underSpan("request", () =>
            rig.source.tx(async (q) => {
              await appendEvent(q, "verification", event("ver_one"));
              await appendEvents(q, "verification", [event("ver_one")]);
              await writeWithEvents(q, "verification", "SELECT 1 AS x", [], [event("ver_one")], new Date(), {
                sql: (base) => `SELECT $${base + 1}::int AS y`,
                params: [7],
              });
              return activeTraceparent();
            }),
          );
          const traceId = span.spanContext().traceId;
          expect(tp).toBe(`00-${traceId}-${span.spanContext().spanId}-01`);
          await waitFor(async () => (await effects(rig, "traced", "ver_one")).length >= 3 && seen.length >= 3, 10_000);

          // stored on every row, carried to the handler (by the row, or the Kafka header)
          const handled = await effects(rig, "traced", "ver_one");
          expect(
            (
              await outboxTraceparents(
                rig,
                handled.map((h) => h.event_id),
              )
            ).map((x) => x.traceparent),
          ).toEqual([tp, tp, tp]);
          expect(handled.map((h) => h.traceparent)).toEqual([tp, tp, tp]);
          expect(seen.map((e) => e.traceparent)).toEqual([tp, tp, tp]);

          const inTrace = (s: ReadableSpan) => s.spanContext().traceId === traceId;
          const childOfRequest = (s: ReadableSpan) => inTrace(s) && s.parentSpanContext?.spanId === span.spanContext().spanId;
          const publish = named("publish verification.outbox");
          expect(
            publish.length,
            spans()
              .map((s) => s.name)
              .join(", "),
          ).toBeGreaterThan(0);
          expect(publish.every(childOfRequest)).toBe(true);
          expect(publish[0].kind).toBe(SpanKind.PRODUCER);
          expect(publish[0].attributes["messaging.system"]).toBe(t.name === "kafka" ? "kafka" : "postgresql");
          expect(publish.reduce((sum, s) => sum + Number(s.attributes["messaging.batch.message_count"]), 0)).toBe(3);

          const processed = (await waitFor(async () => named("process traced").length > 0, 5000)) ? named("process traced") : [];
          expect(
            processed.length,
            spans()
              .map((s) => s.name)
              .join(", "),
          ).toBeGreaterThan(0);
          expect(processed.every(childOfRequest)).toBe(true);
          expect(processed[0].kind).toBe(SpanKind.CONSUMER);
          expect(processed[0].attributes).toMatchObject({
            "messaging.consumer.group.name": "traced",
            "messaging.operation.type": "process",
            "messaging.destination.name": "verification",
          });
          // the handler's SQL is under its span
          const ids = new Set(processed.map((s) => s.spanContext().spanId));
          expect(spans().some((s) => s.attributes["db.system.name"] === "postgresql" && ids.has(s.parentSpanContext?.spanId ?? ""))).toBe(true);
          // broadcast: one span per event and subscriber, named by the subscriber when it gave a name
          expect(named("process verification broadcast").filter(childOfRequest)).toHaveLength(3);
          expect(named("process named subscriber").filter(childOfRequest)).toHaveLength(3);
          // log lines written while handling carry the trace id
          const lines = log.records().filter((x) => x.msg === "handled" && x.grp === "traced" && x.aggregate_id === "ver_one");
          expect(lines).toHaveLength(3);
          expect(lines.every((x) => x.trace_id === traceId)).toBe(true);
        });

        it("a batch holding two requests' events is handled in a span of its own, linked to both", async () => {
          const rig = r!;
          exporter.reset();
          // both requests commit in one transaction: the relay and the consumer take them as one batch
          const spansOf: Span[] = [];
          await rig.source.tx(async (q) => {
            for (const name of ["request-a", "request-b"])
              spansOf.push((await underSpan(name, () => appendEvents(q, "verification", [event("ver_mixed"), event("ver_mixed")]))).span);
          });
          await rig.log.consume({
            group: "mixed",
            topics: ["verification"],
            db: rig.sink,
            schema: "webhook",
            handleBatch: recorder("mixed"),
          });
          const want = spansOf.map((s) => s.spanContext().traceId);
          // its own trace (a root), linked to each request's (a new group also reads the earlier tests' events)
          const linkedToBoth = (s: ReadableSpan) => {
            const linked = s.links.map((l) => l.context.traceId);
            return !s.parentSpanContext && !want.includes(s.spanContext().traceId) && want.every((w) => linked.includes(w));
          };
          const processed = await waitFor(async () => named("process mixed").find(linkedToBoth), 10_000);
          expect(processed, JSON.stringify(named("process mixed").map((s) => s.links))).toBeDefined();
          // the relay's batch held exactly those four events
          const publish = named("publish verification.outbox").find(linkedToBoth);
          expect(publish?.links).toHaveLength(2);
          expect(publish?.attributes["messaging.batch.message_count"]).toBe(4);
        });

        it("a malformed traceparent in a row is ignored: the event is handled, untraced, and the ones after it traced; an event written under no span has none", async () => {
          const rig = r!;
          exporter.reset();
          await rig.log.consume({
            group: "garbage",
            topics: ["verification"],
            db: rig.sink,
            schema: "webhook",
            handle: (q, e) => recorder("garbage")(q, [e]),
          });
          const bad = ["garbage", "00-00000000000000000000000000000000-b7ad6b7169203331-01", "00-zz-yy-01", "x".repeat(5000)];
          await rig.source.tx(async (q) => {
            for (const [i, tp] of bad.entries()) {
              await q.query(
                `INSERT INTO verification.outbox (id, aggregate_type, aggregate_id, event_type, tenant_id, environment, payload, traceparent)
               VALUES ($1, 'verification', 'ver_bad', 'verification.status_changed', 'ten_test', 'test', '{}', $2)`,
                [`evt_garbage${i}`, tp],
              );
            }
          });
          // a sweep's event (tracing on, no span active): stored without a traceparent, handled without a span
          const swept = await appendEvent(rig.source, "verification", event("ver_bad"));
          expect((await outboxTraceparents(rig, [swept]))[0].traceparent).toBeNull();
          const { span, out: id } = await underSpan("after", () => appendEvent(rig.source, "verification", event("ver_bad")));
          const mine = [...bad.map((_, i) => `evt_garbage${i}`), swept, id];
          await waitFor(async () => (await effects(rig, "garbage")).filter((h) => mine.includes(h.event_id)).length === mine.length, 10_000);
          const handled = (await effects(rig, "garbage")).filter((h) => mine.includes(h.event_id));
          expect(handled.map((h) => h.event_id)).toEqual(mine);
          // one span per event (handle, not handleBatch): only the event with a valid context has one
          const ofMine = () => named("process garbage").filter((s) => mine.includes(String(s.attributes["messaging.message.id"])));
          const processed = (await waitFor(async () => ofMine().length > 0, 5000)) ? ofMine() : [];
          expect(processed.map((s) => s.attributes["messaging.message.id"])).toEqual([id]);
          expect(processed[0].spanContext().traceId).toBe(span.spanContext().traceId);
          expect(log.records().filter((x) => x.level === "error")).toEqual([]);
        });
      });
    },
  );
}

describe("a consumer reading, with tracing on, another service's outbox that has no traceparent column yet", () => {
  let r: Rig | undefined;
  let tracing: Tracing | undefined;
  afterAll(async () => {
    await teardown(r);
    await tracing?.shutdown();
  });

  it("waits for that service's migration (a release's first start), as for an outbox not made yet, and logs no error", async () => {
    r = await setup("postgres", { sourceOutbox: false });
    const rig = r;
    tracing = await startTracing({ serviceName: "icv-test", exporter: new InMemorySpanExporter() });
    log.lines.length = 0;
    // the outbox of the service's own migrations, as the release before this one left it
    const columns = async () =>
      (
        await rig.source.query<{ column_name: string }>(
          `SELECT column_name FROM information_schema.columns WHERE table_schema = 'verification' AND table_name = 'outbox'`,
        )
      ).rows.map((c) => c.column_name);
    expect(await columns()).not.toContain("traceparent");
    await rig.log.consume({
      group: "upgrade",
      topics: ["verification"],
      db: rig.sink,
      schema: "webhook",
      handleBatch: recorder("upgrade"),
    });
    await new Promise((res) => setTimeout(res, 300)); // the consumer's first reads meet the old table

    // the service starts: its migrations, then its relay and its writes
    expect(await migrate(rig.source, "verification", outboxMigrations("verification"))).toEqual([
      "outbox.sql",
      "outbox_002_traceparent.sql",
      "outbox_003_stamping.sql",
      "outbox_004_key.sql",
      "outbox_005_fillfactor.sql",
    ]);
    expect(await columns()).toContain("traceparent");
    rig.relay = await startOutboxRelay({ config: rig.config, db: rig.source, schema: "verification", logger });
    const { span } = await underSpan("first request", () => appendEvents(rig.source, "verification", [event("ver_upgrade")]));
    rig.relay.wake();
    await waitFor(async () => (await effects(rig, "upgrade")).length === 1, 70_000, 50);
    expect((await effects(rig, "upgrade"))[0].traceparent).toMatch(new RegExp(`^00-${span.spanContext().traceId}-`));
    expect(log.records().filter((x) => x.level === "error" || x.level === "warn")).toEqual([]);
  }, 90_000);
});
