/**
 * Personal data of the webhook schema at rest (docs/privacy.md): a delivery's stored body (it
 * carries the tenant's client_metadata, and a proof's SD-JWT VC discloses the identifier) is sealed
 * under the data key and opened on read; the start-time key check; the background sealing of
 * bodies stored before sealing (and re-sealing under a newer key version) in batches.
 */
import { checkDataKeys, PersonalData, sealedAad, sealingDatabase, type Database, type SealingDatabase } from "@icv/platform";

const S = "webhook";

/** The webhook service's database with delivery bodies opened on read (ephemeral keys when none were given: hand-built test stores). */
export function webhookDatabase(db: Database, pd?: PersonalData): SealingDatabase {
  return sealingDatabase(db, pd ?? PersonalData.ephemeral(), {
    text: ["payload"],
    json: [],
    // deliveries (whd_…) are the only rows of the schema with a sealed payload
    rowKey: (row) => (typeof row.id === "string" && row.id.startsWith("whd_") ? row.id : undefined),
  });
}

/** A delivery's body as it is stored. */
export const sealBody = (pd: PersonalData, deliveryId: string, body: string): string => pd.seal(body, sealedAad("payload", deliveryId));

/**
 * Refuses to start when a delivery body is sealed under a key version DATA_ENCRYPTION_KEY lacks, or
 * that the configured key of that version does not open. Samples the newest and the oldest sealed
 * body by id (ids grow with time; the background pass re-seals older versions, so these two hold
 * every version in use) through the primary key: a start does not scan the table.
 */
export async function checkWebhookKeys(db: Database, pd: PersonalData): Promise<void> {
  const r = await db.query<{ version: number; id: string; value: string }>(
    `(SELECT key_version AS version, id, payload AS value FROM ${S}.deliveries WHERE key_version IS NOT NULL ORDER BY id DESC LIMIT 1)
     UNION ALL
     (SELECT key_version AS version, id, payload AS value FROM ${S}.deliveries WHERE key_version IS NOT NULL ORDER BY id LIMIT 1)`,
  );
  checkDataKeys(
    pd,
    r.rows.map((x) => ({ version: x.version, value: x.value, aad: sealedAad("payload", x.id) })),
  );
}

/**
 * Seals up to `batch` delivery bodies not sealed under the current key version (stored before
 * sealing, or under an older version after `data-key rotate`) in one transaction; rows another
 * replica is sealing are skipped. Answers how many it sealed (0: nothing left).
 */
export async function sealOutdatedBodies(db: SealingDatabase, batch = 200): Promise<number> {
  const pd = db.personalData;
  return db.tx(async (q) => {
    const r = await q.query<{ id: string; payload: string }>(
      `SELECT id, payload FROM ${S}.deliveries WHERE key_version IS DISTINCT FROM $1 ORDER BY id LIMIT ${batch} FOR UPDATE SKIP LOCKED`,
      [pd.currentVersion],
    );
    if (!r.rows.length) return 0;
    await q.query(`UPDATE ${S}.deliveries d SET payload = u.p, key_version = $3 FROM unnest($1::text[], $2::text[]) AS u(id, p) WHERE d.id = u.id`, [
      r.rows.map((x) => x.id),
      r.rows.map((x) => sealBody(pd, x.id, x.payload)),
      pd.currentVersion,
    ]);
    return r.rows.length;
  });
}
