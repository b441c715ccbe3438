import path from "node:path";
import type { Config, ServiceName } from "./config.ts";
import { openDatabase, type Database } from "./database.ts";
import type { Logger } from "./logger.ts";
import { migrate, readMigrations } from "./migrations.ts";

/**
 * Opens a service's database (its own <NAME>_DATABASE_URL or DATABASE_URL, else the embedded
 * PGlite in `<DATA_DIR>/pgdata`) and applies its migrations in its own schema.
 */
export async function openServiceDatabase(
  config: Config,
  name: ServiceName | "gateway",
  migrationsDir: string,
  logger: Logger,
): Promise<Database> {
  const url = config.databaseUrl(name);
  const db = await openDatabase({
    url,
    dataDir: url ? undefined : path.join(config.DATA_DIR, "pgdata"),
    poolMax: config.DB_POOL_MAX,
  });
  const applied = await migrate(db, name, readMigrations(migrationsDir));
  if (applied.length) logger.info({ applied }, "migrations applied");
  return db;
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
