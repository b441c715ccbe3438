// The rig of the use-case tests: a migrated verification database (a fresh Postgres database with
// DATABASE_URL, else PGlite in memory) and use-case deps with the tests' defaults (system clock,
// a fixed HMAC key, a silent logger, generous send limits), any of which a test overrides.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createLogger, MemoryRateLimiter, migrate, openDatabase, parseConfig, readMigrations, systemClock, type Database } from "@icv/platform";
import { freshPostgres } from "../../../../test/support/fresh-postgres.ts";
import { startTestProofService, type TestProofService } from "../../../proof/test/support/proof-service.ts";
import { VerificationStore } from "../../src/store/verifications.ts";
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

/** A migrated database, a store on it and use-case deps calling a real proof service: the rig of tests that write rows through the use cases. */
export async function storeRig(poolMax = 4): Promise<{
  proof: TestProofService;
  database: Awaited<ReturnType<typeof openVerificationDatabase>>;
  store: VerificationStore;
  deps: UseCaseDeps;
  close(): Promise<void>;
}> {
  const proof = await startTestProofService();
  const database = await openVerificationDatabase(poolMax);
  const store = new VerificationStore(database.db);
  const deps = testUseCaseDeps({ store, proofs: proof.client, config: parseConfig({ ALLOW_PRIVATE_TARGETS: "true" }) });
  return {
    proof,
    database,
    store,
    deps,
    async close() {
      await database.close();
      await proof.close();
    },
  };
}
