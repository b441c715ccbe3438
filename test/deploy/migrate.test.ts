// The migrate-only entry point the chart's migrations Job runs (scripts/migrate.ts): it applies
// every service's migrations in that service's schema and exits, and a second run finds nothing
// to do.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { openDatabase, readMigrations } from "@icv/platform";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const dataDir = mkdtempSync(path.join(tmpdir(), "icv-migrate-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

function runMigrate(): string {
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: "info" };
  // the embedded database in DATA_DIR: this test needs no PostgreSQL
  for (const k of Object.keys(env)) if (k.endsWith("DATABASE_URL")) delete env[k];
  return execFileSync(process.execPath, ["--import", "tsx", "scripts/migrate.ts"], { cwd: ROOT, env, encoding: "utf8", timeout: 60_000 });
}

describe("scripts/migrate.ts (the chart's migrations Job)", () => {
  it("applies the migrations of every service that has some, then a second run applies none", async () => {
    const first = runMigrate();
    const services = readdirSync(path.join(ROOT, "services")).filter((s) => existsSync(path.join(ROOT, "services", s, "migrations")));
    expect(services.length).toBeGreaterThanOrEqual(5);
    const db = await openDatabase({ dataDir: path.join(dataDir, "pgdata") });
    try {
      for (const s of services) {
        const { rows } = await db.query<{ name: string }>(`SELECT name FROM ${s}.schema_migrations ORDER BY version`);
        // the platform's outbox DDL comes last, in every schema whose service publishes events (not
        // session's, nor the log's, which only reads the proof events)
        const own = readMigrations(path.join(ROOT, "services", s, "migrations")).map((m) => m.name);
        expect(
          rows.map((r) => r.name),
          s,
        ).toEqual(
          s === "session" || s === "log"
            ? own
            : [...own, "outbox.sql", "outbox_002_traceparent.sql", "outbox_003_stamping.sql", "outbox_004_key.sql", "outbox_005_fillfactor.sql"],
        );
      }
    } finally {
      await db.close();
    }
    expect(first).toContain("migrations applied");
    const second = runMigrate();
    expect(second).not.toContain("migrations applied");
    expect(second.match(/schema up to date/g)).toHaveLength(services.length);
  }, 120_000);
});
