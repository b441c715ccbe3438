// The rig of the use-case tests: a migrated verification database (a fresh Postgres database with
// DATABASE_URL, else PGlite in memory) and use-case deps with the tests' defaults (system clock,
// a fixed HMAC key, a silent logger, generous send limits), any of which a test overrides.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createLogger, MemoryRateLimiter, migrate, openDatabase, readMigrations, systemClock, type Database } from "@icv/platform";
import { freshPostgres } from "../../../../test/support/fresh-postgres.ts";
import { SendLimits } from "../../src/sending/send-limits.ts";
import { useCaseDeps, type UseCaseDeps, type VerificationDeps } from "../../src/verifications/deps.ts";

const MIGRATIONS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../migrations");

/** The verification schema, migrated; `close` also drops a fresh Postgres database. */
export async function openVerificationDatabase(poolMax = 4): Promise<{ db: Database; close(): Promise<void> }> {
  const fresh = process.env.DATABASE_URL ? await freshPostgres(process.env.DATABASE_URL) : undefined;
  const db = await openDatabase(fresh ? { url: fresh.url, poolMax } : { dataDir: "memory://" });
  await migrate(db, "verification", readMigrations(MIGRATIONS));
  return {
    db,
    async close() {
      await db.close();
      await fresh?.drop();
    },
  };
}

/** Use-case deps: `d` (store, proofs, config and whatever else the test sets) over the defaults. */
export const testUseCaseDeps = (d: Pick<VerificationDeps, "store" | "proofs" | "config"> & Partial<VerificationDeps>): UseCaseDeps =>
  useCaseDeps({
    clock: systemClock,
    hmacKey: "k".repeat(32),
    logger: createLogger({ level: "silent" }),
    sendLimits: new SendLimits({ limiter: new MemoryRateLimiter(), keySecret: "k".repeat(32), budgetPerHour: 1000 }),
    ...d,
  });
