import type { Database } from "./database.ts";
import type { Config } from "./config.ts";
import type { Logger } from "./logger.ts";
import { startMetricsServer, trackDbPool } from "./metrics.ts";
import { startTracing } from "./tracing.ts";

/** Reports a service's database pool (icv_db_pool_connections) until the database is closed; answers db. */
export function trackDatabase<D extends Database>(service: string, db: D): D {
  const stats = db.poolStats?.bind(db);
  if (!stats) return db;
  const untrack = trackDbPool({ service }, () => {
    const s = stats();
    return [
      [{ state: "total" }, s.total],
      [{ state: "idle" }, s.idle],
      [{ state: "waiting" }, s.waiting],
    ];
  });
  const close = db.close.bind(db);
  db.close = async () => {
    untrack();
    await close();
  };
  return db;
}

/**
 * An entry point's metrics and traces: tracing when OTEL_EXPORTER_OTLP_ENDPOINT is set, and for a
 * standalone service (`metricsServer`) the METRICS_PORT listener. The answer stops both.
 */
export async function startObservability(config: Config, logger: Logger, serviceName: string, opts: { metricsServer: boolean }): Promise<() => Promise<void>> {
  const tracing = await startTracing({
    serviceName: config.OTEL_SERVICE_NAME ?? serviceName,
    endpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT,
    logger,
  });
  const metrics = opts.metricsServer ? await startMetricsServer({ host: config.METRICS_HOST, port: config.METRICS_PORT, logger }) : undefined;
  return async () => {
    await metrics?.close();
    await tracing?.shutdown();
  };
}
