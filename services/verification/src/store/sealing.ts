/**
 * Personal data of the verification schema at rest (docs/privacy.md): which columns are sealed,
 * the values a write stores for them, the start-time key check, and the background sealing of
 * rows written before sealing (and re-sealing under a newer key version) in batches.
 */
import {
  checkDataKeys,
  PersonalData,
  sealedAad,
  sealingDatabase,
  type Database,
  type Queryable,
  type SealedColumns,
  type SealingDatabase,
} from "@icv/platform";

const S = "verification";

/** Sealed columns: verifications (ver_…), requests (vreq_…), their assets (request_id#idx), test messages (tmsg_…). */
export const VERIFICATION_SEALED: SealedColumns = {
  text: ["identifier", "identifier_canonical", "instruction", "challenge_message", "from_address", "to_address", "body"],
  json: ["client_metadata"],
  rowKey(row) {
    const id = row.id;
    if (typeof id === "string" && /^(ver|vreq|tmsg)_/.test(id)) return id;
    if (typeof row.request_id === "string" && typeof row.idx === "number") return `${row.request_id}#${row.idx}`;
    return undefined;
  },
};

/** The verification service's database with personal data opened on read (ephemeral keys when none were given: hand-built test stores). */
export function verificationDatabase(db: Database, pd?: PersonalData): SealingDatabase {
  return sealingDatabase(db, pd ?? PersonalData.ephemeral(), VERIFICATION_SEALED);
}

/** The blind index of an identifier of a type (its canonical form): what reuse and every identifier lookup compare. */
export const identifierIndex = (pd: PersonalData, type: string, canonical: string) => pd.index(`identifier:${type}`, canonical);

/** The sealed columns of a verification row as a write stores them. */
export function sealVerification(
  pd: PersonalData,
  v: {
    id: string;
    type: string;
    identifier: string;
    identifier_canonical: string;
    instruction: string;
    challenge_message: string | null;
    client_metadata: Record<string, unknown> | null;
  },
) {
  return {
    identifier: pd.seal(v.identifier, sealedAad("identifier", v.id)),
    identifier_canonical: pd.seal(v.identifier_canonical, sealedAad("identifier_canonical", v.id)),
    instruction: pd.seal(v.instruction, sealedAad("instruction", v.id)),
    challenge_message: pd.seal(v.challenge_message, sealedAad("challenge_message", v.id)),
    client_metadata: pd.sealJson(v.client_metadata, sealedAad("client_metadata", v.id)),
    identifier_index: identifierIndex(pd, v.type, v.identifier_canonical),
    key_version: pd.currentVersion,
  };
}

/** A request asset's identifier as stored. */
export const sealAssetIdentifier = (pd: PersonalData, requestId: string, idx: number, identifier: string | null) =>
  pd.seal(identifier, sealedAad("identifier", `${requestId}#${idx}`));

/** A test message's destinations and text as stored. */
export function sealTestMessage(pd: PersonalData, m: { id: string; from_address: string | null; to_address: string; body: string }) {
  return {
    from_address: pd.seal(m.from_address, sealedAad("from_address", m.id)),
    to_address: pd.seal(m.to_address, sealedAad("to_address", m.id)),
    body: pd.seal(m.body, sealedAad("body", m.id)),
    key_version: pd.currentVersion,
  };
}

const TABLES = [
  { table: "verifications", column: "identifier", key: "id" },
  { table: "verification_requests", column: "COALESCE(client_metadata #>> '{}', '')", key: "id" },
  { table: "test_messages", column: "to_address", key: "id" },
] as const;

/**
 * Refuses to start when a row is sealed under a key version DATA_ENCRYPTION_KEY lacks, or that the
 * configured key of that version does not open (SealedDataError names the version). One sample per
 * table and version, each found through the key_version index (a start does not scan the tables).
 */
export async function checkVerificationKeys(db: Queryable, pd: PersonalData): Promise<void> {
  for (const t of TABLES) {
    // the versions in use, by a loose scan of the key_version index (one probe per version, not a scan of the table)
    const versions = await db.query<{ k: number }>(
      `WITH RECURSIVE v AS (
         SELECT min(key_version) AS k FROM ${S}.${t.table}
         UNION ALL SELECT (SELECT min(key_version) FROM ${S}.${t.table} WHERE key_version > v.k) FROM v WHERE v.k IS NOT NULL)
       SELECT k FROM v WHERE k IS NOT NULL`,
    );
    const col = t.table === "verifications" ? "identifier" : t.table === "test_messages" ? "to_address" : "client_metadata";
    const samples: { version: number; value: string; aad: string }[] = [];
    for (const { k } of versions.rows) {
      const r = await db.query<{ id: string; value: string }>(
        `SELECT ${t.key} AS id, ${t.column} AS value FROM ${S}.${t.table} WHERE key_version = $1 AND ${t.column} LIKE 'pd1.%' LIMIT 1`,
        [k],
      );
      if (r.rows[0]) samples.push({ version: k, value: r.rows[0].value, aad: sealedAad(col, r.rows[0].id) });
    }
    checkDataKeys(pd, samples);
  }
}

/**
 * Seals up to `batch` rows of each sealed table that are not sealed under the current key version
 * (rows written before sealing, or under an older version after `data-key rotate`), in one
 * transaction per table; rows another replica is sealing are skipped (FOR UPDATE SKIP LOCKED).
 * Answers how many rows it sealed (0: nothing left).
 */
export async function sealOutdated(db: SealingDatabase, batch = 200): Promise<number> {
  const pd = db.personalData;
  const due = `(key_version IS NULL OR key_version < $1 OR key_version > $1) ORDER BY id LIMIT ${batch} FOR UPDATE SKIP LOCKED`;
  const verifications = await db.tx(async (q) => {
    const r = await q.query<Parameters<typeof sealVerification>[1]>(
      `SELECT id, type, identifier, identifier_canonical, instruction, challenge_message, client_metadata FROM ${S}.verifications WHERE ${due}`,
      [pd.currentVersion],
    );
    for (const v of r.rows) {
      const s = sealVerification(pd, v);
      await q.query(
        `UPDATE ${S}.verifications SET identifier = $2, identifier_canonical = $3, instruction = $4, challenge_message = $5, client_metadata = $6,
                identifier_index = $7, key_version = $8 WHERE id = $1`,
        [v.id, s.identifier, s.identifier_canonical, s.instruction, s.challenge_message, s.client_metadata, s.identifier_index, s.key_version],
      );
    }
    return r.rows.length;
  });
  const requests = await db.tx(async (q) => {
    const r = await q.query<{ id: string; client_metadata: Record<string, unknown> | null }>(
      `SELECT id, client_metadata FROM ${S}.verification_requests WHERE ${due}`,
      [pd.currentVersion],
    );
    if (!r.rows.length) return 0;
    const assets = await q.query<{ request_id: string; idx: number; identifier: string | null }>(
      `SELECT request_id, idx, identifier FROM ${S}.verification_request_assets WHERE request_id = ANY($1::text[])`,
      [r.rows.map((x) => x.id)],
    );
    for (const a of assets.rows)
      await q.query(`UPDATE ${S}.verification_request_assets SET identifier = $3 WHERE request_id = $1 AND idx = $2`, [
        a.request_id,
        a.idx,
        sealAssetIdentifier(pd, a.request_id, a.idx, a.identifier),
      ]);
    for (const x of r.rows)
      await q.query(`UPDATE ${S}.verification_requests SET client_metadata = $2, key_version = $3 WHERE id = $1`, [
        x.id,
        pd.sealJson(x.client_metadata, sealedAad("client_metadata", x.id)),
        pd.currentVersion,
      ]);
    return r.rows.length;
  });
  const messages = await db.tx(async (q) => {
    const r = await q.query<{ id: string; from_address: string | null; to_address: string; body: string }>(
      `SELECT id, from_address, to_address, body FROM ${S}.test_messages WHERE ${due}`,
      [pd.currentVersion],
    );
    for (const m of r.rows) {
      const s = sealTestMessage(pd, m);
      await q.query(`UPDATE ${S}.test_messages SET from_address = $2, to_address = $3, body = $4, key_version = $5 WHERE id = $1`, [
        m.id,
        s.from_address,
        s.to_address,
        s.body,
        s.key_version,
      ]);
    }
    return r.rows.length;
  });
  return verifications + requests + messages;
}
