// Metrics and traces at the platform's seams: a standalone service's metrics listener, RPC metrics
// with tracing off (no spans, no trace ids), and, tracing on, the trace context crossing a Connect
// hop in memory and over the network (gRPC metadata), with the trace id in the log lines.
import { InMemorySpanExporter } from "@opentelemetry/sdk-trace-base";
import { context, trace } from "@opentelemetry/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ProofService } from "@icv/contracts/gen/icv/proof/v1/proof_service_pb.ts";
import { proofCallers } from "../../../services/proof/src/callers.ts";
import { createLogger } from "../src/logger.ts";
import { metricsText, startMetricsServer } from "../src/metrics.ts";
import { rpcClient } from "../src/rpc.ts";
import { startServiceHost, type ServiceHost } from "../src/service-host.ts";
import { startTracing, tracingEnabled, type Tracing } from "../src/tracing.ts";
import { lineCollector } from "./support/log-lines.ts";
import { testTls, type TestTls } from "./support/tls.ts";

let tls: TestTls;
let proof: ServiceHost;
const log = lineCollector();
const logger = createLogger({ level: "info", destination: log });
/** What each call's handler saw: its traceparent header. */
const seen: (string | null)[] = [];

beforeAll(async () => {
  tls = await testTls();
  proof = await startServiceHost({
    name: "icv.proof.v1.ProofService",
    host: "127.0.0.1",
    port: 0,
    logger,
    identity: await tls.identity("proof"),
    callers: proofCallers,
    routes: (router) =>
      router.service(ProofService, {
        async issueProof(_req, ctx) {
          seen.push(ctx.requestHeader.get("traceparent"));
          logger.info("issuing");
          return {};
        },
      }),
  });
});
afterAll(async () => {
  await proof?.close();
  tls.cleanup();
});

const sample = (text: string, line: string) => text.split("\n").find((l) => l.startsWith(line));

describe("a standalone service's metrics listener", () => {
  it("answers GET /metrics with Prometheus text, and nothing else", async () => {
    const server = await startMetricsServer({ host: "127.0.0.1", port: 0, logger: createLogger({ level: "silent" }) });
    try {
      const res = await fetch(`http://127.0.0.1:${server.port}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^text\/plain/);
      const text = await res.text();
      expect(text).toContain("# TYPE icv_rpc_server_requests_total counter");
      expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);
      expect((await fetch(`http://127.0.0.1:${server.port}/`)).status).toBe(404);
      expect((await fetch(`http://127.0.0.1:${server.port}/metrics`, { method: "POST" })).status).toBe(404);
    } finally {
      await server.close();
    }
  });
});

describe("tracing off (no OTEL_EXPORTER_OTLP_ENDPOINT)", () => {
  it("starts nothing, sends no traceparent and logs no trace_id; RPC metrics still count", async () => {
    expect(await startTracing({ serviceName: "x" })).toBeUndefined();
    expect(tracingEnabled()).toBe(false);
    seen.length = 0;
    log.lines.length = 0;
    await rpcClient(ProofService, proof.url, await tls.identity("verification")).issueProof({});
    expect(seen).toEqual([null]);
    expect(log.records().find((r) => r.msg === "issuing")).not.toHaveProperty("trace_id");
    expect(sample((await metricsText()).body, 'icv_rpc_server_requests_total{service="proof",method="ProofService/IssueProof",code="ok"}')).toMatch(/ 1$/);
  });
});

describe("tracing on", () => {
  const exporter = new InMemorySpanExporter();
  let tracing: Tracing | undefined;
  beforeAll(async () => {
    tracing = await startTracing({ serviceName: "icv-test", exporter });
  });
  afterAll(() => tracing?.shutdown());

  // the URL the host registered runs in memory; "localhost" is another URL, so that call takes the socket
  for (const [path, url] of [
    ["in memory", () => proof.url],
    ["over the network (gRPC metadata)", () => `https://localhost:${proof.port}`],
  ] as const) {
    it(`carries the trace across the hop ${path}: the server span is the client span's child, in the caller's trace`, async () => {
      exporter.reset();
      seen.length = 0;
      log.lines.length = 0;
      const client = rpcClient(ProofService, url(), await tls.identity("verification"));
      const parent = trace.getTracer("test").startSpan("caller");
      await context.with(trace.setSpan(context.active(), parent), () => client.issueProof({}));
      parent.end();
      const traceId = parent.spanContext().traceId;
      expect(seen[0]).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));

      const spans = exporter.getFinishedSpans();
      const call = spans.find((s) => s.name === "call ProofService/IssueProof");
      const served = spans.find((s) => s.name === "proof ProofService/IssueProof");
      expect(call?.spanContext().traceId).toBe(traceId);
      expect(call?.parentSpanContext?.spanId).toBe(parent.spanContext().spanId);
      expect(served?.spanContext().traceId).toBe(traceId);
      expect(served?.parentSpanContext?.spanId).toBe(call?.spanContext().spanId);
      // the handler's log line names the trace
      expect(log.records().find((r) => r.msg === "issuing")?.trace_id).toBe(traceId);
    });
  }
});
