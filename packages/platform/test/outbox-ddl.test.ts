import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase, type Database } from "../src/database.ts";
import { migrate, outboxMigrations, readMigrations } from "../src/migrations.ts";
import { maybeFreshPostgres, type FreshPostgres } from "../../../test/support/fresh-postgres.ts";
import { dumpSchema } from "./support/schema-dump.ts";

// the services whose migrations made their own outbox before the platform held the one DDL
const SERVICES = ["gateway", "proof", "verification", "webhook"] as const;
const MIGRATIONS = (name: string) => path.join(import.meta.dirname, "..", "..", "..", "services", name, "migrations");
const OUTBOX_TABLES = ["outbox"];

let pgFresh: FreshPostgres | undefined;
let db: Database;
beforeAll(async () => {
  pgFresh = await maybeFreshPostgres();
  db = await openDatabase(pgFresh ? { url: pgFresh.url, poolMax: 2 } : { dataDir: "memory://" });
});
afterAll(async () => {
  await db?.close();
  await pgFresh?.drop();
});

describe(`the platform's outbox DDL (${process.env.DATABASE_URL ? "Postgres" : "PGlite"})`, () => {
  it.each(SERVICES)(
    "applies cleanly over the outbox %s's own migrations made: outbox.sql changes nothing, outbox_002 adds the traceparent column, outbox_003 narrows the seq index to stamped rows, outbox_004 keys rows by (aggregate_id, id), outbox_005 leaves half of each page for the stamp",
    async (name) => {
      const own = readMigrations(MIGRATIONS(name));
      // a database as the services left it before: their migrations only
      await migrate(db, name, own);
      const before = await dumpSchema(db, name);
      expect(before.some((l) => l.startsWith("trigger CREATE TRIGGER outbox_notify"))).toBe(true);

      const [ddl, ...later] = outboxMigrations(name);
      expect(ddl.version).toBe("outbox");
      expect(later.map((m) => [m.version, m.name])).toEqual([
        ["outbox_002", "outbox_002_traceparent.sql"],
        ["outbox_003", "outbox_003_stamping.sql"],
        ["outbox_004", "outbox_004_key.sql"],
        ["outbox_005", "outbox_005_fillfactor.sql"],
      ]);
      expect(await migrate(db, name, [...own, ddl])).toEqual(["outbox.sql"]);
      expect(await dumpSchema(db, name)).toEqual(before);
      // a schema that took outbox.sql a release ago gets the later files at its next start, and
      // they add exactly the traceparent column (nullable, no default: old rows and writers
      // untouched), swap the seq index for one of stamped rows only, and make the aggregate's
      // index the primary key in place of the one on id alone
      expect(await migrate(db, name, [...own, ...outboxMigrations(name)])).toEqual([
        "outbox_002_traceparent.sql",
        "outbox_003_stamping.sql",
        "outbox_004_key.sql",
        "outbox_005_fillfactor.sql",
      ]);
      const after = await dumpSchema(db, name);
      expect(before.filter((l) => !after.includes(l)).sort()).toEqual([
        expect.stringMatching(/^constraint outbox outbox_pkey PRIMARY KEY \(id\)$/),
        expect.stringMatching(/^index CREATE INDEX outbox_aggregate ON <schema>\.outbox USING btree \(aggregate_id, id\)$/),
        expect.stringMatching(/^index CREATE UNIQUE INDEX outbox_pkey ON <schema>\.outbox USING btree \(id\)$/),
        expect.stringMatching(/^index CREATE UNIQUE INDEX outbox_seq ON <schema>\.outbox USING btree \(seq\)$/),
      ]);
      expect(after.filter((l) => !before.includes(l)).sort()).toEqual([
        expect.stringMatching(/^column outbox\.traceparent #\d+ text null default $/),
        expect.stringMatching(/^constraint outbox outbox_pkey PRIMARY KEY \(aggregate_id, id\)$/),
        expect.stringMatching(
          /^function CREATE OR REPLACE FUNCTION <schema>\.outbox_stamp\(source text, batch_size integer, events_channel text, traced boolean\)/,
        ),
        expect.stringMatching(/^index CREATE UNIQUE INDEX outbox_pkey ON <schema>\.outbox USING btree \(aggregate_id, id\)$/),
        expect.stringMatching(/^index CREATE UNIQUE INDEX outbox_seq_stamped ON <schema>\.outbox USING btree \(seq\) WHERE \(seq IS NOT NULL\)$/),
      ]);
      // recorded like any migration: the next start applies nothing
      expect(await migrate(db, name, [...own, ...outboxMigrations(name)])).toEqual([]);
      const recorded = await db.query<{ version: string; name: string }>(
        `SELECT version, name FROM ${name}.schema_migrations WHERE version LIKE 'outbox%' ORDER BY version`,
      );
      expect(recorded.rows).toEqual([
        { version: "outbox", name: "outbox.sql" },
        { version: "outbox_002", name: "outbox_002_traceparent.sql" },
        { version: "outbox_003", name: "outbox_003_stamping.sql" },
        { version: "outbox_004", name: "outbox_004_key.sql" },
        { version: "outbox_005", name: "outbox_005_fillfactor.sql" },
      ]);
      // inserts fill half a page: the stamped version of a row fits beside it
      const options = await db.query<{ reloptions: string[] | null }>(
        `SELECT c.reloptions FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = 'outbox'`,
        [name],
      );
      expect(options.rows[0].reloptions).toEqual(["fillfactor=50"]);
    },
  );

  it("gives a service without outbox migrations the same outbox, trigger and function the old migrations made", async () => {
    await migrate(db, "gateway", [...readMigrations(MIGRATIONS("gateway")), ...outboxMigrations("gateway")]);
    await db.exec("CREATE SCHEMA IF NOT EXISTS newsvc; CREATE TABLE newsvc.things (id text PRIMARY KEY)");
    expect(await migrate(db, "newsvc", outboxMigrations("newsvc"))).toEqual([
      "outbox.sql",
      "outbox_002_traceparent.sql",
      "outbox_003_stamping.sql",
      "outbox_004_key.sql",
      "outbox_005_fillfactor.sql",
    ]);

    // functions are schema-wide: the gateway's own (the console audit's guard) are not the outbox's
    const outboxOnly = (lines: string[]) => lines.filter((l) => !l.startsWith("function") || l.includes(".outbox_"));
    const made = await dumpSchema(db, "newsvc", OUTBOX_TABLES);
    expect(made).toEqual(outboxOnly(await dumpSchema(db, "gateway", OUTBOX_TABLES)));
    expect(made.length).toBeGreaterThan(10);
    // newsvc holds only the outbox's two functions (the NOTIFY trigger's and the relay's stamp)
    const fns = (await dumpSchema(db, "newsvc")).filter((l) => l.startsWith("function"));
    expect(fns).toEqual(outboxOnly((await dumpSchema(db, "gateway")).filter((l) => l.startsWith("function"))));
    expect(fns).toHaveLength(2);

    // and it works: an insert wakes the relay's channel
    let wake: (schema: string) => void = () => undefined;
    const woken = new Promise<string>((resolve) => (wake = resolve));
    const unlisten = await db.listen("icv_outbox", (schema) => schema === "newsvc" && wake(schema));
    await db.query(
      `INSERT INTO newsvc.outbox (id, aggregate_type, aggregate_id, event_type, tenant_id, environment, payload) VALUES ('e1', 'thing', 't1', 'thing.made', 'ten', 'test', '{}')`,
    );
    expect(await woken).toBe("newsvc");
    await unlisten();
  });

  it("refuses a schema name that is not a plain identifier", () => {
    expect(() => outboxMigrations("x; DROP SCHEMA gateway")).toThrow(/bad schema name/);
  });
});
