// Applies every service's database migrations, then exits: `npm run migrate`, or in Kubernetes
// the chart's migrations Job (a pre-install/pre-upgrade hook) before the new pods start.
// Each service opens its database as it does at start (its own <NAME>_DATABASE_URL, else
// DATABASE_URL, else the embedded PGlite in DATA_DIR) and migrates its own schema under the
// same advisory lock, so running this while old pods are up is safe. The services still migrate
// at start: after this Job they find nothing pending.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createLogger, loadConfig, openServiceDatabase } from "@icv/platform";

/** The services that keep a schema (the domain service has no database yet), and whether it holds an outbox (as their start.ts opens it). */
const MIGRATED_SERVICES = { gateway: true, verification: true, proof: true, session: false, webhook: true, log: false } as const;

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

const config = loadConfig();
const logger = createLogger({ level: config.LOG_LEVEL });
for (const [name, outbox] of Object.entries(MIGRATED_SERVICES) as [keyof typeof MIGRATED_SERVICES, boolean][]) {
  const log = logger.child({ service: name });
  const db = await openServiceDatabase(config, name, path.join(ROOT, "services", name, "migrations"), log, { outbox });
  await db.close();
  log.info({ database: config.databaseUrl(name) ? "postgres" : "embedded" }, "schema up to date");
}
