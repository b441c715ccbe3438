// A throwaway database on the Postgres of DATABASE_URL (created here, dropped by drop()), empty
// or a copy of a template database (CREATE DATABASE … TEMPLATE). Tests that take it run on
// PGlite when DATABASE_URL is not set.
import { randomBytes } from "node:crypto";
import pg from "pg";

export interface FreshPostgres {
  name: string;
  url: string;
  drop(): Promise<void>;
}

async function onServer(baseUrl: string, sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: baseUrl });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

export const dropDatabase = (baseUrl: string, name: string): Promise<void> => onServer(baseUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);

export async function freshPostgres(baseUrl: string, template?: string): Promise<FreshPostgres> {
  const name = `icv_test_${randomBytes(6).toString("hex")}`;
  await onServer(baseUrl, `CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ""}`);
  const u = new URL(baseUrl);
  u.pathname = `/${name}`;
  return { name, url: u.toString(), drop: () => dropDatabase(baseUrl, name) };
}

/** A fresh database (a copy of `template` when given) when DATABASE_URL is set, else undefined (the caller uses PGlite). */
export const maybeFreshPostgres = (template?: string): Promise<FreshPostgres | undefined> =>
  process.env.DATABASE_URL ? freshPostgres(process.env.DATABASE_URL, template) : Promise.resolve(undefined);
