import type { Database, QueryResult, Queryable } from "./database.ts";
import { type PersonalData, SEALED_PREFIX, SealedDataError } from "./personal-data.ts";

/**
 * Which columns of a schema hold sealed personal data, and the row key their additional data
 * names (`${column}:${key}`): a value is opened only on a row whose key `rowKey` finds.
 */
export interface SealedColumns {
  /** Text columns sealed with PersonalData.seal. */
  text: readonly string[];
  /** jsonb columns sealed with PersonalData.sealJson. */
  json: readonly string[];
  /** The key of a row that holds sealed columns (undefined: this row holds none). */
  rowKey(row: Record<string, unknown>): string | undefined;
}

/** A service's database whose every read answers personal data opened, and that seals with `personalData`. */
export interface SealingDatabase extends Database {
  readonly personalData: PersonalData;
}

/** The additional data of one sealed column of one row. */
export const sealedAad = (column: string, key: string) => `${column}:${key}`;

/** A sealed value on a row without the key its additional data names: refused, never answered as ciphertext. */
const keyless = (column: string) => new SealedDataError(`a sealed ${column} was read without its row's id: select the id with it`, 0);

function openRows<T>(r: QueryResult<T>, pd: PersonalData, cols: SealedColumns): QueryResult<T> {
  for (const row of r.rows as Record<string, unknown>[]) {
    if (row === null || typeof row !== "object") continue;
    let key: string | undefined | null = null;
    for (const c of cols.text) {
      const v = row[c];
      if (typeof v !== "string" || !v.startsWith(SEALED_PREFIX)) continue;
      key ??= cols.rowKey(row);
      if (key === undefined) throw keyless(c);
      row[c] = pd.open(v, sealedAad(c, key));
    }
    for (const c of cols.json) {
      const v = row[c];
      if (typeof v !== "string" || !v.startsWith(SEALED_PREFIX)) continue;
      key ??= cols.rowKey(row);
      if (key === undefined) throw keyless(c);
      row[c] = pd.openJson(v, sealedAad(c, key));
    }
  }
  return r;
}

function opening(q: Queryable, pd: PersonalData, cols: SealedColumns): Queryable {
  return {
    query: async <T>(sql: string, params?: unknown[]) => openRows(await q.query<T>(sql, params), pd, cols),
    exec: (sql) => q.exec(sql),
  };
}

/**
 * Wraps a service's database so that every row it reads (in or out of a transaction) has its
 * sealed columns opened; writes seal explicitly with `personalData`. Already wrapped: answered as is.
 */
export function sealingDatabase(db: Database, pd: PersonalData, cols: SealedColumns): SealingDatabase {
  if ("personalData" in db) return db as SealingDatabase;
  const q = opening(db, pd, cols);
  return {
    kind: db.kind,
    personalData: pd,
    query: q.query,
    exec: q.exec,
    tx: (fn) => db.tx((inner) => fn(opening(inner, pd, cols))),
    listen: (channel, onNotify) => db.listen(channel, onNotify),
    ping: (timeoutMs) => db.ping(timeoutMs),
    poolStats: db.poolStats ? () => db.poolStats?.() ?? { total: 0, idle: 0, waiting: 0 } : undefined,
    close: () => db.close(),
  };
}

/**
 * Refuses to start on sealed rows this service cannot open: for each key version some row names
 * (`versions`: the distinct key versions of the sealed tables, and one sealed sample of each), the
 * key must be configured and must open the sample. The error names the version it needs.
 */
export function checkDataKeys(pd: PersonalData, samples: { version: number; value: string; aad: string }[]): void {
  for (const s of samples) {
    if (!pd.hasVersion(s.version))
      throw new SealedDataError(
        `DATA_ENCRYPTION_KEY is missing key version ${s.version}: rows in the database are sealed with it (set DATA_ENCRYPTION_KEY to include "${s.version}:<key>")`,
        s.version,
      );
    try {
      pd.open(s.value, s.aad);
    } catch {
      throw new SealedDataError(
        `DATA_ENCRYPTION_KEY key version ${s.version} is not the key these rows were sealed with: set the right key version ${s.version}`,
        s.version,
      );
    }
  }
}

/**
 * A verification event's client_metadata as the outbox and the event log keep it
 * (`sealed_client_metadata`): sealed, bound to its verification; undefined when there is none.
 */
export function sealEventMetadata(pd: PersonalData, verificationId: string, metadata: Record<string, unknown> | null | undefined): string | undefined {
  return metadata ? pd.seal(JSON.stringify(metadata), sealedAad("event_client_metadata", verificationId)) : undefined;
}

/** Opens what sealEventMetadata sealed (the webhook body's client_metadata); undefined when there is none. */
export function openEventMetadata(pd: PersonalData, verificationId: string, sealed: string | undefined): Record<string, unknown> | undefined {
  return sealed ? (JSON.parse(pd.open(sealed, sealedAad("event_client_metadata", verificationId))) as Record<string, unknown>) : undefined;
}
