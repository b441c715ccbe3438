import http from "node:http";
import type { AddressInfo } from "node:net";
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { Logger } from "./logger.ts";
import { sqlStatementCounts } from "./database.ts";

/**
 * The process's one Prometheus registry: every service hosted in the process adds to it (label
 * `service`), and the process serves it at `GET /metrics` (the all-in-one on its admin listener,
 * a standalone service on METRICS_PORT). Labels hold names, routes, methods and codes only:
 * never an id, a key or an identifier.
 */
export const metricsRegistry = new Registry();

const registers = [metricsRegistry];
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export const httpRequests = new Counter({
  name: "icv_http_requests_total",
  help: "HTTP requests answered, by route pattern, method and status code",
  labelNames: ["service", "method", "route", "code"] as const,
  registers,
});
export const httpDuration = new Histogram({
  name: "icv_http_request_duration_seconds",
  help: "HTTP request latency, by route pattern, method and status code",
  labelNames: ["service", "method", "route", "code"] as const,
  buckets: LATENCY_BUCKETS,
  registers,
});
export const rpcRequests = new Counter({
  name: "icv_rpc_server_requests_total",
  help: "Internal RPCs served, by service, method (Service/Method) and gRPC code",
  labelNames: ["service", "method", "code"] as const,
  registers,
});
export const rpcDuration = new Histogram({
  name: "icv_rpc_server_duration_seconds",
  help: "Internal RPC latency on the serving side, by service, method and gRPC code",
  labelNames: ["service", "method", "code"] as const,
  buckets: LATENCY_BUCKETS,
  registers,
});
export const rpcRefused = new Counter({
  name: "icv_rpc_refused_total",
  help: "Internal calls refused by the callee's caller allow-list, by caller, service and method",
  labelNames: ["caller", "service", "method"] as const,
  registers,
});
export const rpcCallerRequests = new Counter({
  name: "icv_rpc_requests_total",
  help: "Internal RPCs by caller (a service, or an internal team's client of INTERNAL_CLIENTS_FILE), service, method and gRPC code",
  labelNames: ["caller", "service", "method", "code"] as const,
  registers,
});
export const proofsIssued = new Counter({
  name: "icv_proofs_issued_total",
  help: "Proofs signed, by proof method",
  labelNames: ["method"] as const,
  registers,
});
export const codeSends = new Counter({
  name: "icv_sends_total",
  help: "Verification codes the service sends (or, test keys, records), by channel and environment",
  labelNames: ["channel", "environment"] as const,
  registers,
});
export const codeSendFailures = new Counter({
  name: "icv_send_failures_total",
  help: "Code sends the provider refused or failed, by channel",
  labelNames: ["channel"] as const,
  registers,
});
export const domainRechecks = new Counter({
  name: "icv_domain_rechecks_total",
  help: "Re-checks of verified domains, by trigger (call, scheduled) and outcome (passed, or the failure's reason), and what they did (none, suspended, reinstated)",
  labelNames: ["trigger", "outcome", "change"] as const,
  registers,
});
export const webhookAttempts = new Counter({
  name: "icv_webhook_attempts_total",
  help: "Webhook delivery attempts, by outcome (delivered, retried, failed)",
  labelNames: ["outcome"] as const,
  registers,
});

new Counter({
  name: "icv_sql_statements_total",
  help: "SQL statements sent (queries, BEGIN, COMMIT), by database user (service, or events for the event transport)",
  labelNames: ["db"] as const,
  registers,
  collect() {
    this.reset();
    for (const [db, n] of sqlStatementCounts) this.inc({ db }, n);
  },
});

/** The `service` label of a hosting service: `proof` for icv.proof.v1.ProofService. */
export const serviceLabel = (rpcName: string): string => /^icv\.([a-z]+)\./.exec(rpcName)?.[1] ?? rpcName;

type Labels = Record<string, string>;
type Reading = number | Array<[Labels, number]>;

/**
 * A gauge read at scrape time from the sources that registered (one per service, store, hub…).
 * Sources with equal labels add up (two hubs in one process). A failing source is skipped.
 */
function sampledGauge(name: string, help: string, labelNames: string[], aggregator: "sum" | "max" | "min" = "sum") {
  const sources = new Set<{ labels: Labels; read: () => Reading | Promise<Reading> }>();
  new Gauge({
    name,
    help,
    labelNames,
    registers,
    // `npm start` with workers: how the primary adds up the workers' readings (workers.ts)
    aggregator,
    async collect() {
      this.reset();
      await Promise.all(
        [...sources].map(async (s) => {
          const r = await Promise.resolve()
            .then(s.read)
            .catch(() => undefined);
          if (typeof r === "number") this.inc(s.labels, r);
          else for (const [extra, v] of r ?? []) this.inc({ ...s.labels, ...extra }, v);
        }),
      );
    },
  });
  /** Adds a source; the answer removes it (on close). */
  return (labels: Labels, read: () => Reading | Promise<Reading>): (() => void) => {
    const s = { labels, read };
    sources.add(s);
    return () => void sources.delete(s);
  };
}

/** Connections of a service's database pool, by state (total, idle, waiting clients). */
export const trackDbPool = sampledGauge("icv_db_pool_connections", "Database pool connections by state (total, idle, waiting)", ["service", "state"]);
/** Age in seconds of the oldest unpublished outbox event, per schema (0 when none waits). */
export const trackOutboxLag = sampledGauge("icv_outbox_lag_seconds", "Age of the oldest unpublished outbox event, per schema", ["schema"], "max");
/** Webhook deliveries waiting to be sent (pending, first attempts and retries). */
export const trackWebhookQueue = sampledGauge("icv_webhook_queue_depth", "Webhook deliveries pending (first attempts and retries)", [], "max");
/** 1 while a service's Redis connection is ready, 0 while Redis is away (limits and counters kept in process); absent without REDIS_URL. */
export const trackRedisUp = sampledGauge(
  "icv_redis_up",
  "Redis connection ready (1) or away, with limits kept in process (0), per service",
  ["service"],
  "min",
);
/** Open server-sent event streams, by kind (api, hosted). */
export const trackSseStreams = sampledGauge("icv_sse_streams", "Open server-sent event streams, by kind (api, hosted)", ["kind"]);

let defaults = false;
/** Starts the default process and Node.js metrics (once). */
export function startDefaultMetrics(): void {
  if (defaults) return;
  defaults = true;
  collectDefaultMetrics({ register: metricsRegistry });
}

type MetricsSource = () => Promise<{ contentType: string; body: string }>;
let source: MetricsSource | undefined;
/** Where `GET /metrics` gets its text instead of this process's registry (a worker: every worker's, summed by the primary). */
export function setMetricsSource(s: MetricsSource | undefined): void {
  source = s;
}

/** The registry's text (default process and Node.js metrics included, started on first use). */
export async function metricsText(): Promise<{ contentType: string; body: string }> {
  if (source) return source();
  startDefaultMetrics();
  return { contentType: metricsRegistry.contentType, body: await metricsRegistry.metrics() };
}

/** Answers `GET /metrics` with the registry's text; true when it did (for a server sharing its port). */
export function answerMetrics(req: http.IncomingMessage, res: http.ServerResponse): boolean {
  if (req.method !== "GET" || (req.url ?? "").split("?")[0] !== "/metrics") return false;
  metricsText().then(
    ({ contentType, body }) => res.writeHead(200, { "content-type": contentType }).end(body),
    () => res.writeHead(500).end(),
  );
  return true;
}

/** A standalone service's metrics listener (METRICS_HOST:METRICS_PORT): `GET /metrics` only. */
export async function startMetricsServer(opts: { host: string; port: number; logger: Logger }): Promise<{ port: number; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    if (!answerMetrics(req, res)) res.writeHead(404).end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  opts.logger.info({ port }, "metrics listening");
  return {
    port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
