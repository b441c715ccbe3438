import { textColumns, type Database, type PersonalData, type Queryable, type Scope } from "@icv/platform";
import { sealTestMessage } from "./sealing.ts";
import type { TestMessageRow } from "./rows.ts";

const S = "verification";

/** How long test messages are kept: the verification service's sweeper prunes older rows (pruneTestMessages). */
export const TEST_MESSAGE_TTL_MS = 7 * 24 * 3600_000;

/** A test message's twelve parameters, its personal values sealed: $1 id … $12 key_version (both inserts below). */
function testMessageParams(pd: PersonalData, m: TestMessageRow): unknown[] {
  const sealed = sealTestMessage(pd, m);
  return [
    m.id,
    m.tenant_id,
    m.verification_id,
    m.channel,
    m.direction,
    sealed.from_address,
    sealed.to_address,
    m.subject,
    sealed.body,
    m.created_at,
    m.session_id,
    sealed.key_version,
  ];
}

export async function insertTestMessage(q: Queryable, pd: PersonalData, m: TestMessageRow): Promise<void> {
  await q.query(
    `INSERT INTO ${S}.test_messages (id, tenant_id, environment, verification_id, session_id, channel, direction, from_address, to_address, subject, body, created_at,
       key_version)
     VALUES ($1, $2, 'test', $3, $11, $4, $5, $6, $7, $8, $9, $10, $12)`,
    testMessageParams(pd, m),
  );
}

/**
 * The insert of insertTestMessage as a part of a larger statement (writeWithEvents' `also`): its
 * parameters from base + 1, written only when the statement's `main` wrote its row.
 */
export function testMessageWith(pd: PersonalData, m: TestMessageRow): { sql: (base: number) => string; params: unknown[] } {
  return {
    sql: (b) =>
      `INSERT INTO ${S}.test_messages (id, tenant_id, environment, verification_id, session_id, channel, direction, from_address, to_address, subject, body, created_at,
         key_version)
       SELECT $${b + 1}::text, $${b + 2}::text, 'test', $${b + 3}::text, $${b + 11}::text, $${b + 4}::text, $${b + 5}::text, $${b + 6}::text, $${b + 7}::text,
              $${b + 8}::text, $${b + 9}::text, $${b + 10}::timestamptz, $${b + 12}::integer WHERE EXISTS (SELECT 1 FROM main)`,
    params: testMessageParams(pd, m),
  };
}

/** testMessageWith for a batch (insertVerifications): the messages whose verification `main` wrote, from text arrays. */
export function testMessagesWith(pd: PersonalData, ms: TestMessageRow[]): { sql: (base: number) => string; params: unknown[] } {
  return {
    sql: (b) =>
      `INSERT INTO ${S}.test_messages (id, tenant_id, environment, verification_id, session_id, channel, direction, from_address, to_address, subject, body, created_at,
         key_version)
       SELECT id, tenant_id, 'test', verification_id, session_id, channel, direction, from_address, to_address, subject, body, created_at::timestamptz,
              key_version::integer
         FROM unnest(${Array.from({ length: 12 }, (_, i) => `$${b + i + 1}::text[]`).join(", ")})
              AS u(id, tenant_id, verification_id, channel, direction, from_address, to_address, subject, body, created_at, session_id, key_version)
        WHERE verification_id IN (SELECT id FROM main)`,
    params: textColumns(ms.map((m) => testMessageParams(pd, m))),
  };
}

/** Forgets test messages written before `before`, every tenant's; answers how many went. */
export async function pruneTestMessages(db: Database, before: Date): Promise<number> {
  return (await db.query(`DELETE FROM ${S}.test_messages WHERE created_at < $1`, [before])).rowCount;
}

/** A page of the scope's test messages, newest first, optionally of one verification. */
export async function testMessages(
  db: Database,
  scope: Scope,
  f: { verificationId?: string; limit: number; offset: number },
): Promise<{ rows: TestMessageRow[]; total: number }> {
  const params: unknown[] = [scope.tenantId, scope.env, f.verificationId ?? null];
  const w = `tenant_id = $1 AND environment = $2 AND ($3::text IS NULL OR verification_id = $3)`;
  const [rows, count] = await Promise.all([
    db.query<TestMessageRow>(`SELECT * FROM ${S}.test_messages WHERE ${w} ORDER BY created_at DESC, id DESC LIMIT ${f.limit} OFFSET ${f.offset}`, params),
    db.query<{ total: number }>(`SELECT count(*)::int AS total FROM ${S}.test_messages WHERE ${w}`, params),
  ]);
  return { rows: rows.rows, total: count.rows[0].total };
}
