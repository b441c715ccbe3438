import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Database } from "./database.ts";

export interface Migration {
  version: string;
  name: string;
  sql: string;
  checksum: string;
}

/** Reads `NNN_name.sql` files from dir, in order. */
export function readMigrations(dir: string): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d{3,}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((f) => {
      const sql = readFileSync(path.join(dir, f), "utf8");
      const [version] = f.split("_");
      return { version, name: f, sql, checksum: createHash("sha256").update(sql).digest("hex") };
    });
}

const SAFE_SCHEMA = /^[a-z][a-z0-9_]*$/;

const OUTBOX_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "migrations");

/**
 * The platform's outbox DDL of every service (packages/platform/migrations/) for `schema`, as
 * migrations to apply after the service's own: `outbox.sql` (version "outbox"), idempotent over
 * the outbox the older service migrations made, then `outbox_NNN_name.sql` in order (version
 * "outbox_NNN"), each a change of every outbox (a released file is never edited: the checksum of
 * a recorded one must not change). Each checksum is of its file, the same for every schema.
 */
export function outboxMigrations(schema: string): Migration[] {
  if (!SAFE_SCHEMA.test(schema)) throw new Error(`bad schema name ${schema}`);
  const files = readdirSync(OUTBOX_DIR)
    .filter((f) => /^outbox(_\d{3,}_[a-z0-9_]+)?\.sql$/.test(f))
    .sort();
  return files.map((name) => {
    const template = readFileSync(path.join(OUTBOX_DIR, name), "utf8");
    const checksum = createHash("sha256").update(template).digest("hex");
    const version = name === "outbox.sql" ? "outbox" : name.split("_").slice(0, 2).join("_");
    return { version, name, sql: template.replaceAll("{{schema}}", schema), checksum };
  });
}

/**
 * Applies the pending migrations of one service in its own schema, in one transaction under an
 * advisory lock, so replicas starting together apply each file exactly once. A released
 * migration whose file changed stops the start: migrations are never edited, only added.
 */
export async function migrate(db: Database, schema: string, migrations: Migration[]): Promise<string[]> {
  if (!SAFE_SCHEMA.test(schema)) throw new Error(`bad schema name ${schema}`);
  return db.tx(async (q) => {
    await q.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`icv:migrate:${schema}`]);
    await q.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await q.query(
      `CREATE TABLE IF NOT EXISTS ${schema}.schema_migrations (
         version text PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,
         applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const { rows } = await q.query<{ version: string; name: string; checksum: string }>(`SELECT version, name, checksum FROM ${schema}.schema_migrations`);
    const applied = new Map(rows.map((r) => [r.version, r]));
    const done: string[] = [];
    for (const m of migrations) {
      const prev = applied.get(m.version);
      if (prev) {
        if (prev.checksum !== m.checksum) {
          throw new Error(`migration ${schema}/${m.name} was changed after it was applied; add a new migration instead`);
        }
        continue;
      }
      await q.exec(m.sql);
      await q.query(`INSERT INTO ${schema}.schema_migrations (version, name, checksum) VALUES ($1, $2, $3)`, [m.version, m.name, m.checksum]);
      done.push(m.name);
    }
    return done;
  });
}
