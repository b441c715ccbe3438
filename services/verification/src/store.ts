import { appendEvents, writeWithEvents, type Database, type OutboxEvent, type Queryable, type Scope } from "@icv/platform";

const S = "verification";

export type Status = "pending" | "verified" | "failed" | "expired" | "revoked";

export interface VerificationRow {
  id: string;
  tenant_id: string;
  environment: "live" | "test";
  type: string;
  channel: string;
  identifier: string;
  identifier_canonical: string;
  status: Status;
  code_hmac: string | null;
  challenge_expires_at: Date;
  instruction: string;
  deep_link: string | null;
  challenge_message: string | null;
  attempts: number;
  max_attempts: number;
  client_metadata: Record<string, unknown> | null;
  external_user_id: string | null;
  proof_expires_in: number;
  proof_token: string | null;
  proof_expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
  verified_at: Date | null;
  revoked_at: Date | null;
  revoked_reason: string | null;
}

export type NewVerification = Omit<VerificationRow, "status" | "attempts" | "updated_at" | "proof_token" | "proof_expires_at" | "verified_at" | "revoked_at" | "revoked_reason">;

export interface ListFilter {
  status?: string;
  type?: string;
  channel?: string;
  externalUserId?: string;
  createdAfter?: Date;
  createdBefore?: Date;
  limit: number;
  offset: number;
}

/** One outbox event of a verification, as the SSE replay reads it. */
export interface EventRow {
  id: string;
  event_type: string;
  payload: Record<string, unknown>;
  created_at: Date;
}

/** The status_changed event (and completed, when verified) of one move. */
export function statusEvents(v: VerificationRow, previous: Status | null, at: Date): OutboxEvent[] {
  const base = { aggregateType: "verification", aggregateId: v.id, tenantId: v.tenant_id, environment: v.environment };
  const proof = v.proof_token ? { token: v.proof_token, expires_at: v.proof_expires_at?.toISOString() } : undefined;
  const events: OutboxEvent[] = [
    {
      ...base,
      eventType: "verification.status_changed",
      payload: {
        verification_id: v.id,
        type: v.type,
        channel: v.channel,
        status: v.status,
        previous_status: previous,
        changed_at: at.toISOString(),
        ...(v.status === "verified" ? { verified_at: v.verified_at?.toISOString(), proof } : {}),
        ...(v.status === "revoked" ? { revoked_at: v.revoked_at?.toISOString(), revoked_reason: v.revoked_reason } : {}),
      },
    },
  ];
  if (v.status === "verified") {
    events.push({
      ...base,
      eventType: "verification.completed",
      payload: {
        verification_id: v.id,
        type: v.type,
        channel: v.channel,
        status: v.status,
        verified_at: v.verified_at?.toISOString(),
        external_user_id: v.external_user_id,
        client_metadata: v.client_metadata,
        proof,
      },
    });
  }
  return events;
}

export class VerificationStore {
  constructor(private readonly db: Database) {}

  async insert(v: NewVerification): Promise<VerificationRow> {
    const row: VerificationRow = {
      ...v,
      status: "pending",
      attempts: 0,
      updated_at: v.created_at,
      proof_token: null,
      proof_expires_at: null,
      verified_at: null,
      revoked_at: null,
      revoked_reason: null,
    };
    const r = await writeWithEvents<VerificationRow>(
      this.db,
      S,
      `INSERT INTO ${S}.verifications (id, tenant_id, environment, type, channel, identifier, identifier_canonical, status, code_hmac,
         challenge_expires_at, instruction, deep_link, challenge_message, max_attempts, client_metadata, external_user_id, proof_expires_in,
         created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $17) RETURNING *`,
      [
        v.id, v.tenant_id, v.environment, v.type, v.channel, v.identifier, v.identifier_canonical, v.code_hmac,
        v.challenge_expires_at, v.instruction, v.deep_link, v.challenge_message, v.max_attempts,
        v.client_metadata === null ? null : JSON.stringify(v.client_metadata), v.external_user_id, v.proof_expires_in, v.created_at,
      ],
      statusEvents(row, null, v.created_at),
      v.created_at,
    );
    return r.rows[0];
  }

  async get(scope: Scope, id: string): Promise<VerificationRow | undefined> {
    const r = await this.db.query<VerificationRow>(`SELECT * FROM ${S}.verifications WHERE id = $1 AND tenant_id = $2 AND environment = $3`, [
      id,
      scope.tenantId,
      scope.env,
    ]);
    return r.rows[0];
  }

  async list(scope: Scope, f: ListFilter): Promise<{ rows: VerificationRow[]; total: number }> {
    const where = ["tenant_id = $1", "environment = $2"];
    const params: unknown[] = [scope.tenantId, scope.env];
    const add = (cond: string, value: unknown) => {
      params.push(value);
      where.push(cond.replace("?", `$${params.length}`));
    };
    if (f.status) add("status = ?", f.status);
    if (f.type) add("type = ?", f.type);
    if (f.channel) add("channel = ?", f.channel);
    if (f.externalUserId) add("external_user_id = ?", f.externalUserId);
    if (f.createdAfter) add("created_at > ?", f.createdAfter);
    if (f.createdBefore) add("created_at < ?", f.createdBefore);
    const w = where.join(" AND ");
    const [rows, count] = await Promise.all([
      this.db.query<VerificationRow>(
        `SELECT * FROM ${S}.verifications WHERE ${w} ORDER BY created_at DESC, id DESC LIMIT ${f.limit} OFFSET ${f.offset}`,
        params,
      ),
      this.db.query<{ total: number }>(`SELECT count(*)::int AS total FROM ${S}.verifications WHERE ${w}`, params),
    ]);
    return { rows: rows.rows, total: count.rows[0].total };
  }

  /**
   * The outbox events of one verification of this scope, oldest first (ids are monotonic ULIDs,
   * so id order is creation order), at most `limit` of them.
   */
  async events(scope: Scope, verificationId: string, limit = 1000): Promise<EventRow[]> {
    const r = await this.db.query<EventRow>(
      `SELECT id, event_type, payload, created_at FROM ${S}.outbox
        WHERE aggregate_id = $1 AND aggregate_type = 'verification' AND tenant_id = $2 AND environment = $3
        ORDER BY id LIMIT ${limit}`,
      [verificationId, scope.tenantId, scope.env],
    );
    return r.rows;
  }

  /**
   * Records a wrong answer: one more attempt, and `failed` when it was the last one. Answers the
   * row afterwards, or undefined when it was no longer pending.
   */
  async recordFailedAttempt(scope: Scope, id: string, at: Date): Promise<VerificationRow | undefined> {
    return this.db.tx(async (q) => {
      const r = await q.query<VerificationRow>(
        `UPDATE ${S}.verifications
            SET attempts = attempts + 1,
                status = CASE WHEN attempts + 1 >= max_attempts THEN 'failed' ELSE status END,
                updated_at = $4
          WHERE id = $1 AND tenant_id = $2 AND environment = $3 AND status = 'pending' RETURNING *`,
        [id, scope.tenantId, scope.env, at],
      );
      const v = r.rows[0];
      if (v?.status === "failed") await appendEvents(q, S, statusEvents(v, "pending", at), at);
      return v;
    });
  }

  /** pending → verified with its proof; undefined when it was no longer pending. */
  async markVerified(v: VerificationRow, proof: { token: string; expiresAt: Date }, at: Date): Promise<VerificationRow | undefined> {
    const after: VerificationRow = { ...v, status: "verified", verified_at: at, proof_token: proof.token, proof_expires_at: proof.expiresAt, updated_at: at };
    const r = await writeWithEvents<VerificationRow>(
      this.db,
      S,
      `UPDATE ${S}.verifications SET status = 'verified', verified_at = $4, proof_token = $5, proof_expires_at = $6, updated_at = $4
        WHERE id = $1 AND tenant_id = $2 AND environment = $3 AND status = 'pending' RETURNING *`,
      [v.id, v.tenant_id, v.environment, at, proof.token, proof.expiresAt],
      statusEvents(after, "pending", at),
      at,
    );
    return r.rows[0];
  }

  /** verified → revoked; undefined when it was not verified. */
  async markRevoked(v: VerificationRow, revokedAt: Date, reason: string): Promise<VerificationRow | undefined> {
    const after: VerificationRow = { ...v, status: "revoked", revoked_at: revokedAt, revoked_reason: reason, updated_at: revokedAt };
    const r = await writeWithEvents<VerificationRow>(
      this.db,
      S,
      `UPDATE ${S}.verifications SET status = 'revoked', revoked_at = $4, revoked_reason = $5, updated_at = $4
        WHERE id = $1 AND tenant_id = $2 AND environment = $3 AND status = 'verified' RETURNING *`,
      [v.id, v.tenant_id, v.environment, revokedAt, reason],
      statusEvents(after, "verified", revokedAt),
      revokedAt,
    );
    return r.rows[0];
  }

  /** Expires one pending verification whose challenge has run out (read path: never show a stale pending). */
  async expireOne(v: VerificationRow, now: Date): Promise<VerificationRow | undefined> {
    const r = await writeWithEvents<VerificationRow>(
      this.db,
      S,
      `UPDATE ${S}.verifications SET status = 'expired', updated_at = $4
        WHERE id = $1 AND tenant_id = $2 AND environment = $3 AND status = 'pending' AND challenge_expires_at <= $4 RETURNING *`,
      [v.id, v.tenant_id, v.environment, now],
      statusEvents({ ...v, status: "expired", updated_at: now }, "pending", now),
      now,
    );
    return r.rows[0];
  }

  /**
   * Moves up to `batch` stale pending verifications (of one tenant scope, or all) to expired, with
   * their events. Rows another replica is sweeping are skipped (FOR UPDATE SKIP LOCKED), so
   * replicas never collide.
   */
  async expireDue(now: Date, batch = 500, scope?: Scope): Promise<number> {
    const params = [now, scope?.tenantId ?? null, scope?.env ?? null];
    const dueWhere = `status = 'pending' AND challenge_expires_at <= $1 AND ($2::text IS NULL OR (tenant_id = $2 AND environment = $3))`;
    // the common case (nothing due: every list call, most sweeps) costs one indexed read, no transaction
    if ((await this.db.query(`SELECT 1 FROM ${S}.verifications WHERE ${dueWhere} LIMIT 1`, params)).rowCount === 0) return 0;
    return this.db.tx(async (q) => {
      const r = await q.query<VerificationRow>(
        `UPDATE ${S}.verifications v SET status = 'expired', updated_at = $1
           FROM (SELECT id FROM ${S}.verifications WHERE ${dueWhere}
                  ORDER BY challenge_expires_at LIMIT ${batch} FOR UPDATE SKIP LOCKED) due
          WHERE v.id = due.id RETURNING v.*`,
        params,
      );
      await appendEvents(q, S, r.rows.flatMap((v) => statusEvents(v, "pending", now)), now);
      return r.rows.length;
    });
  }
}
