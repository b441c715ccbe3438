import type { Queryable } from "../../src/database.ts";

/**
 * What a schema holds, as text to compare (a pg_dump for PGlite too): every column, constraint,
 * index, trigger and function, with the schema's name written as `<schema>` so two schemas
 * compare. Tables may be narrowed to some names.
 */
export async function dumpSchema(q: Queryable, schema: string, tables?: string[]): Promise<string[]> {
  const only = tables ? ` AND c.relname = ANY($2::text[])` : "";
  const params = tables ? [schema, tables] : [schema];
  const lines = (
    await Promise.all([
      q.query<{ line: string }>(
        `SELECT format('column %s.%s #%s %s %s default %s', c.relname, a.attname, a.attnum, format_type(a.atttypid, a.atttypmod),
                       CASE WHEN a.attnotnull THEN 'not null' ELSE 'null' END, pg_get_expr(d.adbin, d.adrelid)) AS line
           FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
           LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
          WHERE n.nspname = $1 AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped${only}`,
        params,
      ),
      q.query<{ line: string }>(
        `SELECT format('constraint %s %s %s', c.relname, k.conname, pg_get_constraintdef(k.oid)) AS line
           FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = $1${only}`,
        params,
      ),
      q.query<{ line: string }>(
        `SELECT format('index %s', pg_get_indexdef(i.indexrelid)) AS line
           FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = $1${only}`,
        params,
      ),
      q.query<{ line: string }>(
        `SELECT format('trigger %s', pg_get_triggerdef(t.oid)) AS line
           FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = $1 AND NOT t.tgisinternal${only}`,
        params,
      ),
      q.query<{ line: string }>(
        `SELECT format('function %s', pg_get_functiondef(p.oid)) AS line
           FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1`,
        [schema],
      ),
    ])
  ).flatMap((r) => r.rows.map((row) => row.line.replaceAll(`${schema}.`, "<schema>.")));
  return lines.sort();
}
