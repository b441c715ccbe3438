import { context, propagation, SpanKind, SpanStatusCode, trace, type Context, type Span, type TextMapGetter, type TextMapSetter } from "@opentelemetry/api";
import type { SpanExporter } from "@opentelemetry/sdk-trace-base";

/**
 * OpenTelemetry traces, by hand at the few places that matter (the gateway's HTTP middleware, the
 * RPC interceptors on both sides of every hop, each SQL statement, each Redis command of a request): ESM auto-instrumentation
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
export async function startTracing(opts: { serviceName: string; endpoint?: string; exporter?: SpanExporter; logger?: { info(o: object, msg: string): void } }): Promise<Tracing | undefined> {
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
    h.forEach((_, k) => out.push(k));
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
export async function inSpan<T>(name: string, kind: SpanKind, attributes: Record<string, string | number>, fn: (span: Span) => Promise<T>, parent?: Context): Promise<T> {
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
