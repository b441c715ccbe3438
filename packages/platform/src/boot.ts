import path from "node:path";
import type { ConnectRouter } from "@connectrpc/connect";
import { ConfigError, type Config, type ServiceName } from "./config.ts";
import type { RunningService } from "./running.ts";
import { startServiceHost } from "./service-host.ts";
import { openDatabase, type Database } from "./database.ts";
import type { Logger } from "./logger.ts";
import { migrate, outboxMigrations, readMigrations } from "./migrations.ts";
import { retryWithBackoff } from "./backoff.ts";
import { isTransientDbError } from "./transient.ts";
import { startOutboxRelay } from "./events/relay.ts";
import type { ServiceCallers } from "./callers.ts";
import { serviceIdentity, type TlsIdentity } from "./tls.ts";
import { acquireInternalClients } from "./internal-clients.ts";
import { trackDatabase } from "./observe.ts";
import { adoptEarlyHealth, closeEarlyHealth, openEarlyHealth } from "./health.ts";

/**
 * Opens a service's database (its own <NAME>_DATABASE_URL or DATABASE_URL, else the embedded
 * PGlite in `<DATA_DIR>/pgdata`) and applies its migrations in its own schema; with `outbox`, then
 * the platform's outbox DDL (migrations/outbox*.sql) in that schema. A Postgres that is not
 * reachable yet (or restarts meanwhile) is waited for with backoff, never a crash. The service's
 * health port (when configured) opens first: liveness SERVING, readiness NOT_SERVING until its
 * host starts (hostService adopts it).
 */
export async function openServiceDatabase(
  config: Config,
  name: ServiceName | "gateway",
  migrationsDir: string,
  logger: Logger,
  opts: { outbox?: boolean } = {},
): Promise<Database> {
  const url = config.databaseUrl(name);
  // alone on the embedded database, this service's events would stay in a database no other process can open
  if (config.alone && !url && opts.outbox && !config.KAFKA_BROKERS)
    throw new ConfigError(
      `invalid configuration: DATABASE_URL is not set: ${name}, started alone, would keep its events in an embedded database of its own ` +
        `(${path.join(config.DATA_DIR, "pgdata")}) that the other services' processes cannot read. Set DATABASE_URL (one Postgres for every service, ` +
        `or ${name.toUpperCase()}_DATABASE_URL) or KAFKA_BROKERS, or run every service in one process (npm start)`,
    );
  if (name !== "gateway") await openEarlyHealth(name, config.GRPC_HOST, config.healthPort(name));
  const db = await openDatabase({
    url,
    dataDir: url ? undefined : path.join(config.DATA_DIR, "pgdata"),
    poolMax: config.DB_POOL_MAX,
    queryTimeoutMs: config.DATABASE_QUERY_TIMEOUT_MS,
    label: name,
    wait: { logger, maxMs: config.RETRY_BACKOFF_MAX_MS },
  }).catch(async (e) => {
    await closeEarlyHealth(name);
    throw e;
  });
  const migrations = readMigrations(migrationsDir);
  if (opts.outbox) migrations.push(...outboxMigrations(name));
  const applied = await retryWithBackoff(() => migrate(db, name, migrations), {
    maxMs: config.RETRY_BACKOFF_MAX_MS,
    retryable: isTransientDbError,
    onRetry: (_e, attempt, delay) => logger.warn({ attempt: attempt + 1, retry_in_ms: delay }, "database lost during migrations; retrying"),
  }).catch(async (e) => {
    await db.close();
    await closeEarlyHealth(name);
    throw e;
  });
  if (applied.length) logger.info({ applied }, "migrations applied");
  return trackDatabase(name, db);
}

/** Runs `stop` once on SIGTERM or SIGINT, then exits. */
export function onShutdown(stop: () => Promise<void>, logger: Logger): void {
  let stopping = false;
  const handle = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down");
    stop().then(
      () => process.exit(0),
      (err) => {
        logger.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => handle("SIGTERM"));
  process.on("SIGINT", () => handle("SIGINT"));
}

export interface HostServiceOptions {
  /** Fully qualified RPC service name, for the health service and logs. */
  rpcName: string;
  logger: Logger;
  routes: (router: ConnectRouter) => void;
  /** Who may call which of its RPCs (the service's callers.ts). */
  callers: readonly ServiceCallers[];
  /** Its TLS identity when the service made it already (for its own clients); else made here. Closed on close(). */
  identity?: TlsIdentity;
  /** The service's database: health reports NOT_SERVING while it does not answer; closed last. */
  db?: Database;
  /** Stops background work (sweepers) after the RPC server has drained. */
  onClose?: () => Promise<void>;
  /** Runs the relay of the service's outbox (`<name>.outbox` in db); stopped after onClose. */
  outbox?: boolean;
}

/** Serves a service's RPCs on its configured port; close() drains calls, then background work, then the database. */
export async function hostService(config: Config, name: ServiceName, opts: HostServiceOptions): Promise<RunningService> {
  const { db } = opts;
  // a bad client file refuses the start (ConfigError naming its line) before anything is opened
  const clients = acquireInternalClients(config, opts.logger);
  const identity = opts.identity ?? (await serviceIdentity(config, name, opts.logger));
  const relay = db && opts.outbox ? await startOutboxRelay({ config, db, schema: name, logger: opts.logger }) : undefined;
  let host: Awaited<ReturnType<typeof startServiceHost>>;
  try {
    host = await startServiceHost({
      name: opts.rpcName,
      host: config.GRPC_HOST,
      port: config.servicePort(name),
      healthPort: config.healthPort(name),
      healthListener: adoptEarlyHealth(name),
      identity,
      callers: opts.callers,
      clients: clients?.clients,
      logger: opts.logger,
      routes: opts.routes,
      ready: db ? () => db.ping() : undefined,
      shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
    });
  } catch (e) {
    await relay?.stop();
    await closeEarlyHealth(name);
    identity.close();
    await clients?.release();
    throw e;
  }
  return {
    url: host.url,
    async close() {
      await host.close();
      await opts.onClose?.();
      await relay?.stop();
      await db?.close();
      identity.close();
      await clients?.release();
    },
  };
}
