import { appendEvents, sealedAad, type Database, type Queryable, type Scope, type SealingDatabase } from "@icv/platform";
import { statusEvents } from "./events.ts";
import { reuseCandidates } from "./reuse-candidates.ts";
import { sealAssetIdentifier, sealVerification, verificationDatabase } from "./sealing.ts";
import type { Decide, RequestAssetRow, RequestAssetView, RequestListFilter, RequestRow, RequestView, ReuseCandidateRow, VerificationRow } from "./rows.ts";

const S = "verification";

const OPEN_REQUEST = `status IN ('pending', 'partial')`;

export class RequestStore {
  /** Reads answer personal data opened (store/sealing.ts); writes seal it. */
  private readonly db: SealingDatabase;

  constructor(db: Database) {
    this.db = verificationDatabase(db);
  }

  async insert(r: RequestRow, assets: RequestAssetRow[]): Promise<void> {
    const pd = this.db.personalData;
    await this.db.tx(async (q) => {
      await q.query(
        `INSERT INTO ${S}.verification_requests (id, tenant_id, environment, status, reference_id, action_type, action_title, action_description,
           redirect_url, callback_url, partial_ok, external_user_id, client_metadata, created_at, updated_at, expires_at, max_proof_age, project_id, key_version)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`,
        [
          r.id,
          r.tenant_id,
          r.environment,
          r.status,
          r.reference_id,
          r.action_type,
          r.action_title,
          r.action_description,
          r.redirect_url,
          r.callback_url,
          r.partial_ok,
          r.external_user_id,
          pd.sealJson(r.client_metadata, sealedAad("client_metadata", r.id)),
          r.created_at,
          r.updated_at,
          r.expires_at,
          r.max_proof_age,
          r.project_id ?? null,
          pd.currentVersion,
        ],
      );
      for (const a of assets) {
        await q.query(
          `INSERT INTO ${S}.verification_request_assets (request_id, idx, type, identifier, channel, allowed_channels, required, status, verification_id, starts,
                                                          proof_format, holder_key)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, CASE WHEN $9::text IS NULL THEN 0 ELSE 1 END, $10, $11)`,
          [
            a.request_id,
            a.idx,
            a.type,
            sealAssetIdentifier(pd, a.request_id, a.idx, a.identifier),
            a.channel,
            a.allowed_channels,
            a.required,
            a.status,
            a.verification_id,
            a.proof_format ?? "jwt",
            a.holder_key ? JSON.stringify(a.holder_key) : null,
          ],
        );
      }
    });
  }

  private async withAssets(q: Queryable, rows: RequestRow[]): Promise<RequestView[]> {
    if (!rows.length) return [];
    const a = await q.query<RequestAssetView>(
      `SELECT a.*, v.status AS v_status, v.verified_at AS v_verified_at, v.proof_token, v.proof_expires_at,
              v.proof_identifier_salt, v.proof_sd_jwt_vc
         FROM ${S}.verification_request_assets a LEFT JOIN ${S}.verifications v ON v.id = a.verification_id
        WHERE a.request_id = ANY($1::text[]) ORDER BY a.request_id, a.idx`,
      [rows.map((r) => r.id)],
    );
    return rows.map((r) => ({ ...r, assets: a.rows.filter((x) => x.request_id === r.id) }));
  }

  async get(scope: Scope, id: string): Promise<RequestView | undefined> {
    const r = await this.db.query<RequestRow>(`SELECT * FROM ${S}.verification_requests WHERE id = $1 AND tenant_id = $2 AND environment = $3`, [
      id,
      scope.tenantId,
      scope.env,
    ]);
    return (await this.withAssets(this.db, r.rows))[0];
  }

  async newestByReference(scope: Scope, referenceId: string): Promise<RequestView | undefined> {
    const r = await this.db.query<RequestRow>(
      `SELECT * FROM ${S}.verification_requests WHERE tenant_id = $1 AND environment = $2 AND reference_id = $3
        ORDER BY created_at DESC, id DESC LIMIT 1`,
      [scope.tenantId, scope.env, referenceId],
    );
    return (await this.withAssets(this.db, r.rows))[0];
  }

  async list(scope: Scope, f: RequestListFilter): Promise<{ rows: RequestView[]; total: number }> {
    const where = ["tenant_id = $1", "environment = $2"];
    const params: unknown[] = [scope.tenantId, scope.env];
    if (f.status) where.push(`status = $${params.push(f.status)}`);
    if (f.referenceId) where.push(`reference_id = $${params.push(f.referenceId)}`);
    const w = where.join(" AND ");
    const [rows, count] = await Promise.all([
      this.db.query<RequestRow>(
        `SELECT * FROM ${S}.verification_requests WHERE ${w} ORDER BY created_at DESC, id DESC LIMIT ${f.limit} OFFSET ${f.offset}`,
        params,
      ),
      this.db.query<{ total: number }>(`SELECT count(*)::int AS total FROM ${S}.verification_requests WHERE ${w}`, params),
    ]);
    return { rows: await this.withAssets(this.db, rows.rows), total: count.rows[0].total };
  }

  /** The request of the scope whose asset this verification drives (an OAuth sign-in goes back to it). */
  async requestIdOfVerification(scope: Scope, verificationId: string): Promise<string | undefined> {
    const r = await this.db.query<{ request_id: string }>(
      `SELECT a.request_id FROM ${S}.verification_request_assets a JOIN ${S}.verification_requests r ON r.id = a.request_id
        WHERE a.verification_id = $1 AND r.tenant_id = $2 AND r.environment = $3 LIMIT 1`,
      [verificationId, scope.tenantId, scope.env],
    );
    return r.rows[0]?.request_id;
  }

  /** Which of these verifications drive an asset of some request (one statement, outside any transaction). */
  async inRequests(verificationIds: string[]): Promise<Set<string>> {
    if (!verificationIds.length) return new Set();
    const r = await this.db.query<{ verification_id: string }>(
      `SELECT DISTINCT verification_id FROM ${S}.verification_request_assets WHERE verification_id = ANY($1::text[])`,
      [verificationIds],
    );
    return new Set(r.rows.map((x) => x.verification_id));
  }

  /** The requests that have an asset driven by any of these verifications, one statement, oldest request first. */
  async requestIdsOfMany(q: Queryable, verificationIds: string[]): Promise<string[]> {
    if (!verificationIds.length) return [];
    const r = await q.query<{ request_id: string }>(
      `SELECT DISTINCT request_id FROM ${S}.verification_request_assets WHERE verification_id = ANY($1::text[]) ORDER BY request_id`,
      [verificationIds],
    );
    return r.rows.map((x) => x.request_id);
  }

  /**
   * Locks one request (FOR UPDATE, so concurrent moves of its assets apply one after the other),
   * reads it with its assets' verifications, and writes what `decide` answers, with its events and
   * the expiry of its pending verifications, all in `q`'s transaction.
   */
  async apply(q: Queryable, id: string, decide: Decide, at: Date, scope?: Scope): Promise<{ before: RequestView; after?: RequestView } | undefined> {
    const r = await q.query<RequestRow>(
      `SELECT * FROM ${S}.verification_requests WHERE id = $1 AND ($2::text IS NULL OR (tenant_id = $2 AND environment = $3)) FOR UPDATE`,
      [id, scope?.tenantId ?? null, scope?.env ?? null],
    );
    const [before] = await this.withAssets(q, r.rows);
    if (!before) return undefined;
    const change = decide(before);
    if (!change) return { before };
    await q.query(
      `UPDATE ${S}.verification_requests SET status = $2, updated_at = $3,
              completed_at = CASE WHEN $2 = 'completed' THEN $3 ELSE completed_at END,
              cancelled_at = CASE WHEN $2 = 'cancelled' THEN $3 ELSE cancelled_at END
        WHERE id = $1`,
      [id, change.status, at],
    );
    for (const a of change.assets) {
      await q.query(`UPDATE ${S}.verification_request_assets SET status = $3 WHERE request_id = $1 AND idx = $2`, [id, a.idx, a.status]);
    }
    if (change.expireVerifications) {
      const ids = before.assets.map((a) => a.verification_id).filter((v): v is string => !!v);
      if (ids.length) {
        const v = await q.query<VerificationRow>(
          `UPDATE ${S}.verifications SET status = 'expired', updated_at = $2 WHERE id = ANY($1::text[]) AND status = 'pending' RETURNING *`,
          [ids, at],
        );
        await appendEvents(
          q,
          S,
          v.rows.flatMap((row) => statusEvents(this.db.personalData, row, "pending", at)),
          at,
        );
      }
    }
    await appendEvents(q, S, change.events, at);
    const [after] = await this.withAssets(q, (await q.query<RequestRow>(`SELECT * FROM ${S}.verification_requests WHERE id = $1`, [id])).rows);
    return { before, after };
  }

  /** Applies `decide` to one request of this scope in its own transaction. */
  async applyInScope(scope: Scope, id: string, decide: Decide, at: Date) {
    return this.db.tx((q) => this.apply(q, id, decide, at, scope));
  }

  /**
   * Applies `decide` (the expiry) to up to `batch` open requests past their expires_at, of one
   * scope or all. Rows another replica is sweeping are skipped (FOR UPDATE SKIP LOCKED).
   */
  async expireDue(now: Date, decide: Decide, batch = 200, scope?: Scope): Promise<number> {
    const params = [now, scope?.tenantId ?? null, scope?.env ?? null];
    const dueWhere = `${OPEN_REQUEST} AND expires_at <= $1 AND ($2::text IS NULL OR (tenant_id = $2 AND environment = $3))`;
    if ((await this.db.query(`SELECT 1 FROM ${S}.verification_requests WHERE ${dueWhere} LIMIT 1`, params)).rowCount === 0) return 0;
    return this.db.tx(async (q) => {
      const due = await q.query<{ id: string }>(
        `SELECT id FROM ${S}.verification_requests WHERE ${dueWhere} ORDER BY expires_at LIMIT ${batch} FOR UPDATE SKIP LOCKED`,
        params,
      );
      for (const { id } of due.rows) await this.apply(q, id, decide, now);
      return due.rows.length;
    });
  }

  /** One request by id alone, any tenant (the hosted page: its token, checked first, names the request). */
  async getById(id: string): Promise<RequestView | undefined> {
    const r = await this.db.query<RequestRow>(`SELECT * FROM ${S}.verification_requests WHERE id = $1`, [id]);
    return (await this.withAssets(this.db, r.rows))[0];
  }

  /**
   * The hosted page started an asset: it now follows this verification (in_progress), with the
   * identifier and channel the user chose, and the verification it followed before (if still
   * pending) expires. Only while the request is open; false otherwise.
   */
  async assignAsset(scope: Scope, id: string, idx: number, a: { identifier: string; channel: string; verificationId: string }, at: Date): Promise<boolean> {
    return this.db.tx(async (q) => {
      const r = await q.query(`SELECT 1 FROM ${S}.verification_requests WHERE id = $1 AND tenant_id = $2 AND environment = $3 AND ${OPEN_REQUEST} FOR UPDATE`, [
        id,
        scope.tenantId,
        scope.env,
      ]);
      if (!r.rowCount) return false;
      const prev = await q.query<{ verification_id: string | null }>(
        `SELECT verification_id FROM ${S}.verification_request_assets WHERE request_id = $1 AND idx = $2`,
        [id, idx],
      );
      await q.query(
        `UPDATE ${S}.verification_request_assets SET identifier = $3, channel = $4, verification_id = $5, status = 'in_progress'
          WHERE request_id = $1 AND idx = $2`,
        [id, idx, sealAssetIdentifier(this.db.personalData, id, idx, a.identifier), a.channel, a.verificationId],
      );
      // a restart replaces the asset's verification: the one it had stops (its code no longer counts)
      const old = prev.rows[0]?.verification_id;
      if (old && old !== a.verificationId) {
        const v = await q.query<VerificationRow>(
          `UPDATE ${S}.verifications SET status = 'expired', updated_at = $2 WHERE id = $1 AND status = 'pending' RETURNING *`,
          [old, at],
        );
        await appendEvents(
          q,
          S,
          v.rows.flatMap((row) => statusEvents(this.db.personalData, row, "pending", at)),
          at,
        );
      }
      await q.query(`UPDATE ${S}.verification_requests SET updated_at = $2 WHERE id = $1`, [id, at]);
      return true;
    });
  }

  /**
   * Counts one more start of asset `idx` (hosted page), up to `max`. The start past `max` fails
   * the asset instead (starts stays max + 1) and its open verification expires, with its events.
   * Answers the new count, or undefined when the request is not open (or not this scope's).
   */
  async claimStart(scope: Scope, id: string, idx: number, max: number, at: Date): Promise<number | undefined> {
    return this.db.tx(async (q) => {
      const r = await q.query(`SELECT 1 FROM ${S}.verification_requests WHERE id = $1 AND tenant_id = $2 AND environment = $3 AND ${OPEN_REQUEST} FOR UPDATE`, [
        id,
        scope.tenantId,
        scope.env,
      ]);
      if (!r.rowCount) return undefined;
      const a = await q.query<{ starts: number; verification_id: string | null }>(
        `UPDATE ${S}.verification_request_assets SET starts = LEAST(starts + 1, $3 + 1) WHERE request_id = $1 AND idx = $2 RETURNING starts, verification_id`,
        [id, idx, max],
      );
      const asset = a.rows[0];
      if (!asset || asset.starts <= max) return asset?.starts;
      await q.query(`UPDATE ${S}.verification_request_assets SET status = 'failed' WHERE request_id = $1 AND idx = $2`, [id, idx]);
      if (asset.verification_id) {
        const v = await q.query<VerificationRow>(
          `UPDATE ${S}.verifications SET status = 'expired', updated_at = $4
            WHERE id = $1 AND tenant_id = $2 AND environment = $3 AND status = 'pending' RETURNING *`,
          [asset.verification_id, scope.tenantId, scope.env, at],
        );
        await appendEvents(
          q,
          S,
          v.rows.flatMap((row) => statusEvents(this.db.personalData, row, "pending", at)),
          at,
        );
      }
      await q.query(`UPDATE ${S}.verification_requests SET updated_at = $2 WHERE id = $1`, [id, at]);
      return asset.starts;
    });
  }

  /** Gives back a start whose verification could not be made (refused by a send limit, a bad identifier). */
  async releaseStart(scope: Scope, id: string, idx: number, max: number): Promise<void> {
    await this.db.query(
      `UPDATE ${S}.verification_request_assets a SET starts = a.starts - 1
         FROM ${S}.verification_requests r
        WHERE a.request_id = $1 AND a.idx = $2 AND a.starts BETWEEN 1 AND $5 AND r.id = a.request_id AND r.tenant_id = $3 AND r.environment = $4`,
      [id, idx, scope.tenantId, scope.env, max],
    );
  }

  // ---- smart reuse (reuse.ts) -------------------------------------------------------------------

  /** Verified proofs of the scope's external user that may complete an asset (reuse-candidates.ts). */
  reuseCandidates(scope: Scope, f: Parameters<typeof reuseCandidates>[2]): Promise<ReuseCandidateRow[]> {
    return reuseCandidates(this.db, scope, f);
  }

  /**
   * Completes one asset of a request with a verification made from an earlier proof, in one
   * transaction: locks the request, lets `check` refuse (it sees the request and whether the
   * source verification is still verified), stores the verification (verified, with its proof and
   * the events of a normal pending → verified move), points the asset at it and applies `decide`.
   */
  async attachReused(
    scope: Scope,
    requestId: string,
    idx: number,
    v: VerificationRow,
    check: (r: RequestView | undefined, sourceVerified: boolean) => void,
    decide: Decide,
    at: Date,
  ): Promise<RequestView> {
    return this.db.tx(async (q) => {
      const locked = await q.query<RequestRow>(`SELECT * FROM ${S}.verification_requests WHERE id = $1 AND tenant_id = $2 AND environment = $3 FOR UPDATE`, [
        requestId,
        scope.tenantId,
        scope.env,
      ]);
      const [r] = await this.withAssets(q, locked.rows);
      const src = await q.query(`SELECT 1 FROM ${S}.verifications WHERE id = $1 AND tenant_id = $2 AND environment = $3 AND status = 'verified' FOR SHARE`, [
        v.reused_from,
        scope.tenantId,
        scope.env,
      ]);
      check(r, src.rowCount === 1);
      const sealed = sealVerification(this.db.personalData, { ...v, challenge_message: null });
      await q.query(
        `INSERT INTO ${S}.verifications (id, tenant_id, environment, type, channel, identifier, identifier_canonical, status, code_hmac,
           challenge_expires_at, instruction, deep_link, challenge_message, max_attempts, client_metadata, external_user_id, proof_expires_in,
           created_at, updated_at, verified_at, proof_token, proof_expires_at, method, reused_from, proof_format, holder_key, proof_identifier_salt, proof_sd_jwt_vc,
           identifier_index, key_version)
         VALUES ($1, $2, $3, $4, $5, $6, $7, 'verified', NULL, $8, $9, NULL, NULL, $10, $11, $12, $13, $14, $14, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24)`,
        [
          v.id,
          v.tenant_id,
          v.environment,
          v.type,
          v.channel,
          sealed.identifier,
          sealed.identifier_canonical,
          v.challenge_expires_at,
          sealed.instruction,
          v.max_attempts,
          sealed.client_metadata,
          v.external_user_id,
          v.proof_expires_in,
          at,
          v.proof_token,
          v.proof_expires_at,
          v.method,
          v.reused_from,
          v.proof_format,
          v.holder_key ? JSON.stringify(v.holder_key) : null,
          v.proof_identifier_salt,
          v.proof_sd_jwt_vc,
          sealed.identifier_index,
          sealed.key_version,
        ],
      );
      const pending: VerificationRow = { ...v, status: "pending", verified_at: null, proof_token: null, proof_expires_at: null };
      await appendEvents(q, S, [...statusEvents(this.db.personalData, pending, null, at), ...statusEvents(this.db.personalData, v, "pending", at)], at);
      await q.query(
        `UPDATE ${S}.verification_request_assets SET identifier = $3, channel = $4, verification_id = $5, status = 'in_progress'
          WHERE request_id = $1 AND idx = $2`,
        [requestId, idx, sealAssetIdentifier(this.db.personalData, requestId, idx, v.identifier), v.channel, v.id],
      );
      const applied = await this.apply(q, requestId, decide, at, scope);
      return applied!.after ?? applied!.before;
    });
  }
}
