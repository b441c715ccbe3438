/** The verified-users reads (rpc/verified-users.ts says which verifications count). */
import type { Database, Scope } from "@icv/platform";

const S = "verification";

/** One group (user) as the store's GROUP BY answers it. */
export interface UserSummaryRow {
  external_user_id: string;
  verification_count: number;
  types_verified: string[];
  first_verified_at: Date;
  last_verified_at: Date;
}

/** One verification of a user, as the store answers it. */
export interface UserVerificationRow {
  id: string;
  external_user_id: string;
  type: string;
  channel: string;
  identifier: string;
  status: string;
  verified_at: Date | null;
  created_at: Date;
  proof_expires_at: Date | null;
  has_proof: boolean;
}

/**
 * Verified users of a scope (rpc/verified-users.ts says which verifications count): a page of groups by
 * external_user_id, newest last_verified_at first, with the number of groups. One GROUP BY over
 * the verifications_verified_users index; the total comes from a window over the groups.
 */
export async function verifiedUsers(db: Database, scope: Scope, limit: number, offset: number): Promise<{ rows: UserSummaryRow[]; total: number }> {
  const params = [scope.tenantId, scope.env];
  const r = await db.query<UserSummaryRow & { total: number }>(
    `SELECT external_user_id, count(*)::int AS verification_count, array_agg(DISTINCT type ORDER BY type) AS types_verified,
            min(verified_at) AS first_verified_at, max(verified_at) AS last_verified_at, count(*) OVER ()::int AS total
       FROM ${S}.verifications
      WHERE tenant_id = $1 AND environment = $2 AND status = 'verified' AND external_user_id IS NOT NULL
      GROUP BY external_user_id
      ORDER BY last_verified_at DESC, external_user_id
      LIMIT ${limit} OFFSET ${offset}`,
    params,
  );
  if (r.rows.length > 0 || offset === 0) return { rows: r.rows, total: r.rows[0]?.total ?? 0 };
  // a page past the end has no row to carry the total
  const c = await db.query<{ total: number }>(
    `SELECT count(DISTINCT external_user_id)::int AS total FROM ${S}.verifications
      WHERE tenant_id = $1 AND environment = $2 AND status = 'verified' AND external_user_id IS NOT NULL`,
    params,
  );
  return { rows: [], total: c.rows[0].total };
}

/** The summary of one verified user of a scope, or undefined. */
export async function verifiedUser(db: Database, scope: Scope, externalUserId: string): Promise<UserSummaryRow | undefined> {
  const r = await db.query<UserSummaryRow>(
    `SELECT external_user_id, count(*)::int AS verification_count, array_agg(DISTINCT type ORDER BY type) AS types_verified,
            min(verified_at) AS first_verified_at, max(verified_at) AS last_verified_at
       FROM ${S}.verifications
      WHERE tenant_id = $1 AND environment = $2 AND status = 'verified' AND external_user_id = $3
      GROUP BY external_user_id`,
    [scope.tenantId, scope.env, externalUserId],
  );
  return r.rows[0];
}

/**
 * The verifications in `statuses` of some external users of a scope (one query for a whole
 * page of users), newest verified_at first. has_proof: verified, with a proof not expired at `now`.
 */
export async function userVerifications(
  db: Database,
  scope: Scope,
  externalUserIds: string[],
  statuses: readonly string[],
  now: Date,
): Promise<UserVerificationRow[]> {
  if (externalUserIds.length === 0) return [];
  const r = await db.query<UserVerificationRow>(
    // one index lookup per user (the lateral keeps the planner from scanning the whole scope
    // when the table has no statistics yet, as on a freshly loaded PGlite)
    `SELECT v.* FROM unnest($3::text[]) AS u(external_user_id)
       CROSS JOIN LATERAL (
         SELECT id, external_user_id, type, channel, identifier, status, verified_at, created_at, proof_expires_at,
                (status = 'verified' AND proof_token IS NOT NULL AND proof_expires_at > $5) AS has_proof
           FROM ${S}.verifications
          WHERE tenant_id = $1 AND environment = $2 AND external_user_id = u.external_user_id AND status = ANY($4::text[])
         OFFSET 0) v
      ORDER BY v.verified_at DESC NULLS LAST, v.id DESC`,
    [scope.tenantId, scope.env, externalUserIds, [...statuses], now],
  );
  return r.rows;
}
