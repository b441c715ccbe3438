// The console's reads of a scope's verifications (rpc/insights.ts): counts grouped in the database
// over the (tenant_id, environment, created_at) index, and a search by the identifier's blind index.
// Neither loads a whole table: the counts leave as at most buckets × statuses × channels rows, the
// search as one page.
import type { Database, Scope } from "@icv/platform";
import type { VerificationRow } from "./rows.ts";

const S = "verification";

/** One group of the counts: the bucket's start (seconds since the epoch, UTC), a status, a channel, how many. */
export interface StatsGroup {
  start: number;
  status: string;
  channel: string;
  n: number;
}

/** The scope's verifications created at or after `since`, counted per bucket ("hour" or "day", UTC), status and channel. */
export async function countVerifications(db: Database, scope: Scope, since: Date, bucket: "hour" | "day"): Promise<StatsGroup[]> {
  const r = await db.query<{ start: string; status: string; channel: string; n: number }>(
    `SELECT extract(epoch FROM date_trunc($4, created_at AT TIME ZONE 'UTC'))::bigint::text AS start, status, channel, count(*)::int AS n
       FROM ${S}.verifications
      WHERE tenant_id = $1 AND environment = $2 AND created_at >= $3
      GROUP BY 1, 2, 3`,
    [scope.tenantId, scope.env, since, bucket],
  );
  return r.rows.map((g) => ({ start: Number(g.start), status: g.status, channel: g.channel, n: g.n }));
}

/**
 * A page of the scope's verifications whose identifier's blind index is one of `indexes` (one per
 * type and canonical form the search could mean: store/sealing.ts identifierIndex), newest first.
 * The identifiers are sealed, so the search compares indexes only; rows are opened by `db`.
 */
export async function verificationsByIdentifier(
  db: Database,
  scope: Scope,
  indexes: string[],
  limit: number,
  offset: number,
): Promise<{ rows: VerificationRow[]; total: number }> {
  if (!indexes.length) return { rows: [], total: 0 };
  const params = [scope.tenantId, scope.env, indexes];
  const w = `tenant_id = $1 AND environment = $2 AND identifier_index = ANY($3::text[])`;
  const [rows, count] = await Promise.all([
    db.query<VerificationRow>(`SELECT * FROM ${S}.verifications WHERE ${w} ORDER BY created_at DESC, id DESC LIMIT ${limit} OFFSET ${offset}`, params),
    db.query<{ total: number }>(`SELECT count(*)::int AS total FROM ${S}.verifications WHERE ${w}`, params),
  ]);
  return { rows: rows.rows, total: count.rows[0].total };
}
