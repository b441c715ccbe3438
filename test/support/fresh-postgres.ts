// A throwaway database on the Postgres of DATABASE_URL (created here, dropped by drop()).
// Tests that take it run on PGlite when DATABASE_URL is not set.
import { randomBytes } from "node:crypto";
import pg from "pg";

export interface FreshPostgres {
  url: string;
  drop(): Promise<void>;
}

export async function freshPostgres(baseUrl: string): Promise<FreshPostgres> {
  const name = `icv_test_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const u = new URL(baseUrl);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: baseUrl });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

/** A fresh database when DATABASE_URL is set, else undefined (the caller uses PGlite). */
export const maybeFreshPostgres = (): Promise<FreshPostgres | undefined> =>
  process.env.DATABASE_URL ? freshPostgres(process.env.DATABASE_URL) : Promise.resolve(undefined);
