import {
  context,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type SpanContext,
  type TextMapGetter,
  type TextMapSetter,
} from "@opentelemetry/api";
import type { SpanExporter } from "@opentelemetry/sdk-trace-base";

/**
 * OpenTelemetry traces, by hand at the few places that matter (the gateway's HTTP middleware, the
 * RPC interceptors on both sides of every hop, each SQL statement, each Redis command of a
 * request, and the event pipeline: the outbox relay, the consumers, the webhook attempts): ESM auto-instrumentation
 * would need a loader hook before any import, which the tsx entry points and tests do not have.
 * Off unless started (OTEL_EXPORTER_OTLP_ENDPOINT set, or a test's exporter): then no SDK is
 * loaded and every hook below is one boolean test.
 */
let on = false;

/** Whether a tracer provider was started in this process. */
export const tracingEnabled = (): boolean => on;

const tracer = () => trace.getTracer("icv");

export interface Tracing {
  /** Sends what is buffered and stops. */
  shutdown(): Promise<void>;
}

/**
 * Starts tracing for this process: spans batched to OTLP/HTTP (the exporter reads
 * OTEL_EXPORTER_OTLP_ENDPOINT and the other standard OTEL_* variables), or to `exporter` as they
 * end (tests). W3C trace context (`traceparent`) is the propagation format. Unset endpoint and
 * no exporter: nothing is started.
 */
export async function startTracing(opts: {
  serviceName: string;
  endpoint?: string;
  exporter?: SpanExporter;
  logger?: { info(o: object, msg: string): void };
}): Promise<Tracing | undefined> {
  if (!opts.exporter && !opts.endpoint) return undefined;
  const [{ NodeTracerProvider }, base, { resourceFromAttributes }] = await Promise.all([
    import("@opentelemetry/sdk-trace-node"),
    import("@opentelemetry/sdk-trace-base"),
    import("@opentelemetry/resources"),
  ]);
  let processor;
  if (opts.exporter) processor = new base.SimpleSpanProcessor(opts.exporter);
  else {
    const { OTLPTraceExporter } = await import("@opentelemetry/exporter-trace-otlp-http");
    processor = new base.BatchSpanProcessor(new OTLPTraceExporter());
  }
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ "service.name": opts.serviceName }),
    spanProcessors: [processor],
  });
  provider.register();
  on = true;
  opts.logger?.info({ endpoint: opts.endpoint ? new URL(opts.endpoint).origin : "in-memory" }, "tracing on");
  return {
    async shutdown() {
      on = false;
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

const headerGetter: TextMapGetter<Headers> = {
  keys: (h) => {
    const out: string[] = [];
    h.forEach((_, k) => {
      out.push(k);
    });
    return out;
  },
  get: (h, k) => h.get(k) ?? undefined,
};
const headerSetter: TextMapSetter<Headers> = { set: (h, k, v) => h.set(k, v) };

/** The trace context carried by incoming headers (Fetch Headers: Connect's, in memory or gRPC metadata). */
export const extractContext = (h: Headers): Context => propagation.extract(context.active(), h, headerGetter);
/** Writes the active trace context (`traceparent`) into outgoing headers. */
export const injectContext = (h: Headers): void => propagation.inject(context.active(), h, headerSetter);

/** Runs fn inside a new span (child of `parent`, else of the active one); the span ends when fn settles, its status from the outcome. */
export async function inSpan<T>(
  name: string,
  kind: SpanKind,
  attributes: Record<string, string | number>,
  fn: (span: Span) => Promise<T>,
  parent?: Context,
): Promise<T> {
  const span = tracer().startSpan(name, { kind, attributes }, parent ?? context.active());
  try {
    return await context.with(trace.setSpan(parent ?? context.active(), span), () => fn(span));
  } catch (e) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof Error ? e.name : "error" });
    throw e;
  } finally {
    span.end();
  }
}

/** The active span's trace id, for log lines (undefined when tracing is off or no span is active). */
export function activeTraceId(): string | undefined {
  if (!on) return undefined;
  const span = trace.getActiveSpan();
  return span?.isRecording() ? span.spanContext().traceId : undefined;
}

/**
 * A SQL statement's span (name: operation and statement name, never its text or values), under
 * the active span only: background polling (relays, sweepers, consumers) makes no traces.
 */
export function sqlSpan<T>(statement: string, sql: string, run: () => Promise<T>): Promise<T> {
  if (!trace.getActiveSpan()) return run();
  const op = /^\s*([A-Za-z]+)/.exec(sql)?.[1]?.toUpperCase() ?? "SQL";
  return inSpan(`${op} ${statement}`, SpanKind.CLIENT, { "db.system.name": "postgresql", "db.operation.name": op, "db.statement.name": statement }, run);
}

/**
 * A Redis command's span (name: command and what it is for, e.g. `EVAL rate_limit`; never its
 * keys or arguments, which hold API key hashes and tenant ids), under the active span only.
 */
export function redisSpan<T>(command: string, purpose: string, run: () => Promise<T>): Promise<T> {
  if (!trace.getActiveSpan()) return run();
  return inSpan(`${command} ${purpose}`, SpanKind.CLIENT, { "db.system.name": "redis", "db.operation.name": command }, run);
}

export { SpanKind, SpanStatusCode };

/**
 * An incoming HTTP request's server span (continuing a `traceparent` sent with it); `end` names
 * it by the route pattern once routing is done. Runs `next` inside the span's context.
 */
export function httpServerSpan(method: string, headers: Record<string, unknown>, next: () => void): (route: string, status: number) => void {
  const parent = propagation.extract(context.active(), headers);
  const span = tracer().startSpan(method, { kind: SpanKind.SERVER, attributes: { "http.request.method": method } }, parent);
  context.with(trace.setSpan(parent, span), next);
  return (route, status) => {
    span.updateName(`${method} ${route}`);
    span.setAttributes({ "http.route": route, "http.response.status_code": status });
    if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  };
}

/**
 * The W3C `traceparent` of the active span (`00-<trace id>-<span id>-<flags>`), stored with an
 * outbox event so the work it causes joins the request's trace. Undefined when tracing is off (one
 * boolean test, no string built) or no span is active.
 */
export function activeTraceparent(): string | undefined {
  if (!on) return undefined;
  const sc = trace.getActiveSpan()?.spanContext();
  return sc && isSpanContextValid(sc) ? `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, "0")}` : undefined;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/**
 * The span context a stored `traceparent` names (as a remote parent), or undefined for anything
 * that is not one: absent, malformed, version ff, all-zero ids, a version-00 value with extra
 * fields. A bad value never fails the work it came with; that work is just not traced.
 */
export function parseTraceparent(tp: string | null | undefined): SpanContext | undefined {
  if (!tp || tp.length > 512) return undefined;
  const m = TRACEPARENT.exec(tp.trim());
  if (!m || m[1] === "ff" || (m[1] === "00" && m[5] !== undefined)) return undefined;
  const sc: SpanContext = { traceId: m[2], spanId: m[3], traceFlags: parseInt(m[4], 16) & 1, isRemote: true };
  return isSpanContextValid(sc) ? sc : undefined;
}

/**
 * Where a span over stored messages goes (OpenTelemetry messaging conventions, the messages'
 * creation contexts deduplicated): when every message comes from one trace (one request's events),
 * the child of the first context, linked to the others, so the span shows in the request's trace;
 * else the root of a trace of its own, linked to each. Undefined when no message carries a valid
 * context: work no request caused (sweeps, events written with tracing off) makes no span.
 */
function messagesParent(traceparents: Iterable<string | null | undefined>): { parent: Context; links: Link[] } | undefined {
  const seen = new Set<string>();
  const contexts: SpanContext[] = [];
  for (const tp of traceparents) {
    if (!tp || seen.has(tp)) continue;
    seen.add(tp);
    const sc = parseTraceparent(tp);
    if (sc) contexts.push(sc);
  }
  if (!contexts.length) return undefined;
  const oneTrace = contexts.every((c) => c.traceId === contexts[0].traceId);
  if (!oneTrace) return { parent: ROOT_CONTEXT, links: contexts.map((c) => ({ context: c })) };
  return { parent: trace.setSpanContext(ROOT_CONTEXT, contexts[0]), links: contexts.slice(1).map((c) => ({ context: c })) };
}

const failed = (span: Span, e: unknown) => span.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof Error ? e.name : "error" });

/**
 * Runs fn (sync or async) in a span over messages that carry stored trace contexts (see
 * messagesParent: child of their one trace, else linked to each); fn runs without a span when none
 * does (fn is handed the span, or undefined). The span ends when fn returns or settles. Callers
 * test tracingEnabled() first, so that nothing (not even the list of traceparents) is made when
 * tracing is off.
 */
export function inMessagesSpan<T>(
  name: string,
  kind: SpanKind,
  attributes: Attributes,
  traceparents: Iterable<string | null | undefined>,
  fn: (span?: Span) => T,
): T {
  const where = on ? messagesParent(traceparents) : undefined;
  if (!where) return fn();
  const span = tracer().startSpan(name, { kind, attributes, links: where.links }, where.parent);
  let out: T;
  try {
    out = context.with(trace.setSpan(where.parent, span), fn, undefined, span);
  } catch (e) {
    failed(span, e);
    span.end();
    throw e;
  }
  if (out instanceof Promise) {
    return out.then(
      (v) => {
        span.end();
        return v;
      },
      (e) => {
        failed(span, e);
        span.end();
        throw e;
      },
    ) as T;
  }
  span.end();
  return out;
}

/**
 * A span over messages recorded after the fact (the work is one statement whose answer names the
 * messages): started at `startTime`, ended now; nothing when no message carries a context.
 */
export function recordMessagesSpan(
  name: string,
  kind: SpanKind,
  attributes: Attributes,
  traceparents: Iterable<string | null | undefined>,
  startTime: Date,
): void {
  const where = on ? messagesParent(traceparents) : undefined;
  if (!where) return;
  tracer().startSpan(name, { kind, attributes, links: where.links, startTime }, where.parent).end();
}
