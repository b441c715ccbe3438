/** Domain verifications' check state (verification.domain_checks): the token, the count, what the last check saw. */
import type { Database, Queryable, Scope } from "@icv/platform";

const S = "verification";

/** One observation of a check, as stored and shown: a name server, a URL or a provider API. */
export interface StoredObservation {
  source: string;
  found: string[];
  error: string;
  matched: boolean;
}

/** What one check saw (the `last_check` member). */
export interface StoredCheck {
  passed: boolean;
  /** Why it failed: record_missing, record_mismatch, unreachable, policy_refused (absent when it passed). */
  reason?: string;
  /** Run by the re-check sweeper, not by a call. */
  scheduled?: boolean;
  summary: string;
  /** ISO 8601. */
  checked_at: string;
  observations: StoredObservation[];
}

export interface DomainCheckRow {
  verification_id: string;
  tenant_id: string;
  environment: "live" | "test";
  token: string | null;
  email_prefix: string | null;
  provider_detected: string | null;
  provider_name: string | null;
  check_count: number;
  last_checked_at: Date | null;
  last_check: StoredCheck | null;
  /** Scheduled re-checks: seconds between two (null: none) and when the next is due. */
  recheck_interval_s: number | null;
  next_recheck_at: Date | null;
  /** Failed checks in a row that reached no server. */
  unreachable_count: number;
}

export type NewDomainCheck = Pick<DomainCheckRow, "token" | "email_prefix" | "provider_detected" | "provider_name">;

/** Written with its verification, in the insert's transaction. */
export async function insertDomainCheck(q: Queryable, v: { id: string; tenant_id: string; environment: string }, d: NewDomainCheck): Promise<void> {
  await q.query(
    `INSERT INTO ${S}.domain_checks (verification_id, tenant_id, environment, token, email_prefix, provider_detected, provider_name)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [v.id, v.tenant_id, v.environment, d.token, d.email_prefix, d.provider_detected, d.provider_name],
  );
}

/** The check state of a scope's domain verifications (the only SQL of domain checks). */
export class DomainCheckStore {
  constructor(private readonly db: Database) {}

  async get(scope: Scope, id: string): Promise<DomainCheckRow | undefined> {
    const r = await this.db.query<DomainCheckRow>(`SELECT * FROM ${S}.domain_checks WHERE verification_id = $1 AND tenant_id = $2 AND environment = $3`, [
      id,
      scope.tenantId,
      scope.env,
    ]);
    return r.rows[0];
  }

  /** Several at once (the hosted page's domain assets): one query. */
  async many(scope: Scope, ids: string[]): Promise<Map<string, DomainCheckRow>> {
    if (!ids.length) return new Map();
    const r = await this.db.query<DomainCheckRow>(
      `SELECT * FROM ${S}.domain_checks WHERE verification_id = ANY($1::text[]) AND tenant_id = $2 AND environment = $3`,
      [ids, scope.tenantId, scope.env],
    );
    return new Map(r.rows.map((row) => [row.verification_id, row]));
  }

  /**
   * Claims the next check: counts it and stamps `at`, but only when the last check is at least
   * `gapMs` old (one conditional UPDATE, so concurrent checks and replicas cannot both pass). A
   * scheduled re-check due meanwhile is moved to `leaseUntil` (the sweeper does not take it while
   * this check runs; the check's end sets the real next one).
   * Answers the row, or when refused the time the next check is allowed.
   */
  async claim(scope: Scope, id: string, at: Date, gapMs: number, leaseUntil?: Date): Promise<{ row: DomainCheckRow } | { retryAt: Date } | undefined> {
    // a scheduled re-check is held off (lease) while this call checks, as claimDue does for the sweeper
    const r = await this.db.query<DomainCheckRow>(
      `UPDATE ${S}.domain_checks SET check_count = check_count + 1, last_checked_at = $4,
              next_recheck_at = CASE WHEN next_recheck_at IS NULL OR $6::timestamptz IS NULL THEN next_recheck_at ELSE GREATEST(next_recheck_at, $6) END
        WHERE verification_id = $1 AND tenant_id = $2 AND environment = $3 AND (last_checked_at IS NULL OR last_checked_at <= $5)
        RETURNING *`,
      [id, scope.tenantId, scope.env, at, new Date(at.getTime() - gapMs), leaseUntil ?? null],
    );
    if (r.rows[0]) return { row: r.rows[0] };
    const cur = await this.get(scope, id);
    if (!cur) return undefined;
    return { retryAt: new Date((cur.last_checked_at ?? at).getTime() + gapMs) };
  }

  /** Keeps what a check saw; counts the unreachable streak (reset by any other outcome) and answers it. */
  async recordCheck(scope: Scope, id: string, check: StoredCheck): Promise<number> {
    const r = await this.db.query<{ unreachable_count: number }>(
      `UPDATE ${S}.domain_checks SET last_check = $4, unreachable_count = CASE WHEN $5 THEN unreachable_count + 1 ELSE 0 END
        WHERE verification_id = $1 AND tenant_id = $2 AND environment = $3 RETURNING unreachable_count`,
      [id, scope.tenantId, scope.env, JSON.stringify(check), !check.passed && check.reason === "unreachable"],
    );
    return r.rows[0]?.unreachable_count ?? 0;
  }

  /** Sets the re-check interval (at create). */
  async setInterval(scope: Scope, id: string, seconds: number): Promise<void> {
    await this.db.query(`UPDATE ${S}.domain_checks SET recheck_interval_s = $4 WHERE verification_id = $1 AND tenant_id = $2 AND environment = $3`, [
      id,
      scope.tenantId,
      scope.env,
      seconds,
    ]);
  }

  /** When the next scheduled re-check is due (null: none). */
  async scheduleNext(scope: Scope, id: string, at: Date | null): Promise<void> {
    await this.db.query(`UPDATE ${S}.domain_checks SET next_recheck_at = $4 WHERE verification_id = $1 AND tenant_id = $2 AND environment = $3`, [
      id,
      scope.tenantId,
      scope.env,
      at,
    ]);
  }

  /**
   * Claims up to `limit` due re-checks, every tenant's, for this replica: rows locked with FOR
   * UPDATE SKIP LOCKED (another replica's concurrent claim skips them) and their due time pushed
   * to `leaseUntil` in the same statement, so no other replica takes them until this one has
   * checked them (or died: the lease runs out and another replica takes them). Each claim counts
   * as a check. Rows whose verification is no longer verified or suspended, or whose proof has
   * expired, leave the schedule first.
   */
  async claimDue(now: Date, limit: number, leaseUntil: Date): Promise<DomainCheckRow[]> {
    await this.db.query(
      `UPDATE ${S}.domain_checks d SET next_recheck_at = NULL FROM ${S}.verifications v
        WHERE v.id = d.verification_id AND d.next_recheck_at <= $1
          AND (v.status NOT IN ('verified', 'suspended') OR v.proof_expires_at IS NULL OR v.proof_expires_at <= $1)`,
      [now],
    );
    const r = await this.db.query<DomainCheckRow>(
      `WITH due AS (
         SELECT verification_id FROM ${S}.domain_checks
          WHERE next_recheck_at <= $1 AND environment = 'live'
          ORDER BY next_recheck_at LIMIT $2
          FOR UPDATE SKIP LOCKED)
       UPDATE ${S}.domain_checks d SET next_recheck_at = $3, check_count = d.check_count + 1, last_checked_at = $1
         FROM due WHERE d.verification_id = due.verification_id
       RETURNING d.*`,
      [now, limit, leaseUntil],
    );
    return r.rows;
  }
}
