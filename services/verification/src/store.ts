import { appendEvents, writeWithEvents, type Database, type OutboxEvent, type ProofMethod, type Queryable, type Scope } from "@icv/platform";
import type { UserSummaryRow, UserVerificationRow } from "./users.ts";

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
  /** How many times the code was resent (email channels; at most MAX_RESENDS). */
  resend_count: number;
  /** When the current code was sent by a resend; null while it is the one sent at creation. */
  code_sent_at: Date | null;
  /** How control was shown (the proof's `method` claim); null until completed (and on rows completed before it was recorded). */
  method: ProofMethod | null;
  /** The verification whose proof was reused (method reused_proof). */
  reused_from: string | null;
  /** Live phone verifications: HMAC of (channel, code), to find the verification an inbound message's code belongs to. */
  code_lookup: string | null;
  /** The session that proved this verification (RecordSessionVerification); one verification per session. */
  origin: string | null;
  /** Phone: "inbound" (reverse OTP, only a provider message completes it) or "outbound" (a code we sent; submit checks it). Null else. */
  delivery: "inbound" | "outbound" | null;
}

export type NewVerification = Omit<VerificationRow, "status" | "attempts" | "updated_at" | "proof_token" | "proof_expires_at" | "verified_at" | "revoked_at" | "revoked_reason" | "resend_count" | "code_sent_at" | "method" | "reused_from">;

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

/** A message a test-mode verification would have sent or expects (verification.test_messages). */
export interface TestMessageRow {
  id: string;
  tenant_id: string;
  environment: "test";
  verification_id: string | null;
  /** Set for a test session's message. */
  session_id: string | null;
  channel: string;
  direction: "outbound" | "inbound";
  from_address: string | null;
  to_address: string;
  subject: string | null;
  body: string;
  created_at: Date;
}

/** How long test messages are kept: older rows of the tenant are pruned on each write. */
export const TEST_MESSAGE_TTL_MS = 7 * 24 * 3600_000;

async function insertTestMessage(q: Queryable, m: TestMessageRow): Promise<void> {
  await q.query(
    `INSERT INTO ${S}.test_messages (id, tenant_id, environment, verification_id, session_id, channel, direction, from_address, to_address, subject, body, created_at)
     VALUES ($1, $2, 'test', $3, $11, $4, $5, $6, $7, $8, $9, $10)`,
    [m.id, m.tenant_id, m.verification_id, m.channel, m.direction, m.from_address, m.to_address, m.subject, m.body, m.created_at, m.session_id],
  );
  await q.query(`DELETE FROM ${S}.test_messages WHERE tenant_id = $1 AND environment = 'test' AND created_at < $2`, [
    m.tenant_id,
    new Date(m.created_at.getTime() - TEST_MESSAGE_TTL_MS),
  ]);
}

export class VerificationStore {
  constructor(private readonly db: Database) {}

  /** Stores a new verification with its creation event; a test-mode message (testMessageOf in verifications.ts) goes in the same transaction. */
  async insert(v: NewVerification, testMessage?: TestMessageRow): Promise<VerificationRow> {
    if (testMessage) return this.db.tx(async (q) => {
      const row = await this.insertIn(q, v);
      await insertTestMessage(q, testMessage);
      return row;
    });
    return this.insertIn(this.db, v);
  }

  private async insertIn(q: Queryable, v: NewVerification): Promise<VerificationRow> {
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
      resend_count: 0,
      code_sent_at: null,
      method: null,
      reused_from: null,
    };
    const r = await writeWithEvents<VerificationRow>(
      q,
      S,
      `INSERT INTO ${S}.verifications (id, tenant_id, environment, type, channel, identifier, identifier_canonical, status, code_hmac,
         challenge_expires_at, instruction, deep_link, challenge_message, max_attempts, client_metadata, external_user_id, proof_expires_in,
         created_at, updated_at, code_lookup, origin, delivery)
       VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $17, $18, $19, $20) RETURNING *`,
      [
        v.id, v.tenant_id, v.environment, v.type, v.channel, v.identifier, v.identifier_canonical, v.code_hmac,
        v.challenge_expires_at, v.instruction, v.deep_link, v.challenge_message, v.max_attempts,
        v.client_metadata === null ? null : JSON.stringify(v.client_metadata), v.external_user_id, v.proof_expires_in, v.created_at,
        v.code_lookup, v.origin, v.delivery,
      ],
      statusEvents(row, null, v.created_at),
      v.created_at,
    );
    return r.rows[0];
  }

  /**
   * The live verifications holding this code lookup (any tenant), pending ones first, then the
   * newest: an inbound message's code is matched here. Codes repeat only by chance (36^6), so
   * this is one row nearly always.
   */
  async byCodeLookup(lookup: string): Promise<VerificationRow[]> {
    const r = await this.db.query<VerificationRow>(
      `SELECT * FROM ${S}.verifications WHERE code_lookup = $1 AND environment = 'live'
        ORDER BY (status = 'pending') DESC, created_at DESC LIMIT 10`,
      [lookup],
    );
    return r.rows;
  }

  /** The verification a session made (RecordSessionVerification), in this scope. */
  async byOrigin(scope: Scope, origin: string): Promise<VerificationRow | undefined> {
    const r = await this.db.query<VerificationRow>(`SELECT * FROM ${S}.verifications WHERE origin = $1 AND tenant_id = $2 AND environment = $3`, [
      origin,
      scope.tenantId,
      scope.env,
    ]);
    return r.rows[0];
  }

  /** Forgets the inbound attempt keys older than `before`; answers how many went. */
  async pruneInboundAttempts(before: Date): Promise<number> {
    return (await this.db.query(`DELETE FROM ${S}.inbound_attempts WHERE created_at < $1`, [before])).rowCount ?? 0;
  }

  /** Stores one test-mode message that is not written with a verification (a test session's). */
  async insertTestMessage(m: TestMessageRow): Promise<void> {
    await this.db.tx((q) => insertTestMessage(q, m));
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
  async recordFailedAttempt(scope: Scope, id: string, at: Date, messageKey?: string): Promise<VerificationRow | undefined> {
    return this.db.tx(async (q) => {
      if (messageKey) {
        // a provider message counts once: its key is kept in the same transaction as the count
        const first = await q.query(
          `INSERT INTO ${S}.inbound_attempts (message_key, verification_id, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
          [messageKey, id, at],
        );
        if (first.rowCount === 0) {
          const cur = await q.query<VerificationRow>(`SELECT * FROM ${S}.verifications WHERE id = $1 AND tenant_id = $2 AND environment = $3`, [id, scope.tenantId, scope.env]);
          return cur.rows[0];
        }
      }
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
  async markVerified(v: VerificationRow, proof: { token: string; expiresAt: Date; method: ProofMethod }, at: Date): Promise<VerificationRow | undefined> {
    const after: VerificationRow = {
      ...v,
      status: "verified",
      verified_at: at,
      proof_token: proof.token,
      proof_expires_at: proof.expiresAt,
      method: proof.method,
      updated_at: at,
    };
    const r = await writeWithEvents<VerificationRow>(
      this.db,
      S,
      `UPDATE ${S}.verifications SET status = 'verified', verified_at = $4, proof_token = $5, proof_expires_at = $6, method = $7, updated_at = $4
        WHERE id = $1 AND tenant_id = $2 AND environment = $3 AND status = 'pending' RETURNING *`,
      [v.id, v.tenant_id, v.environment, at, proof.token, proof.expiresAt, proof.method],
      statusEvents(after, "pending", at),
      at,
    );
    return r.rows[0];
  }

  /** verified → revoked; undefined when it was not verified. `q`: the caller's transaction (the proof.revoked consumer's). */
  async markRevoked(v: VerificationRow, revokedAt: Date, reason: string, q: Queryable = this.db): Promise<VerificationRow | undefined> {
    const after: VerificationRow = { ...v, status: "revoked", revoked_at: revokedAt, revoked_reason: reason, updated_at: revokedAt };
    const r = await writeWithEvents<VerificationRow>(
      q,
      S,
      `UPDATE ${S}.verifications SET status = 'revoked', revoked_at = $4, revoked_reason = $5, updated_at = $4
        WHERE id = $1 AND tenant_id = $2 AND environment = $3 AND status = 'verified' RETURNING *`,
      [v.id, v.tenant_id, v.environment, revokedAt, reason],
      statusEvents(after, "verified", revokedAt),
      revokedAt,
    );
    return r.rows[0];
  }

  /** The verification a proof belongs to (the proof id is the verification id), read in `q`; undefined when there is none. */
  async byProof(q: Queryable, scope: Scope, proofId: string): Promise<VerificationRow | undefined> {
    const r = await q.query<VerificationRow>(`SELECT * FROM ${S}.verifications WHERE id = $1 AND tenant_id = $2 AND environment = $3`, [
      proofId,
      scope.tenantId,
      scope.env,
    ]);
    return r.rows[0];
  }

  /**
   * Writes a resent code in one conditional UPDATE: only while the verification is pending with a
   * live challenge, has resends left, and its last code was sent at least `minGapMs` ago. So two
   * concurrent resends cannot both pass (the second re-checks the row the first changed).
   * Undefined when a condition failed (the caller reloads to say which).
   */
  async writeResentCode(
    v: VerificationRow,
    next: { codeHmac: string; expiresAt: Date },
    rules: { maxResends: number; minGapMs: number },
    at: Date,
    testMessage?: TestMessageRow,
  ): Promise<VerificationRow | undefined> {
    if (testMessage) return this.db.tx(async (q) => {
      const row = await this.writeResentCodeIn(q, v, next, rules, at);
      if (row) await insertTestMessage(q, testMessage);
      return row;
    });
    return this.writeResentCodeIn(this.db, v, next, rules, at);
  }

  private async writeResentCodeIn(
    q: Queryable,
    v: VerificationRow,
    next: { codeHmac: string; expiresAt: Date },
    rules: { maxResends: number; minGapMs: number },
    at: Date,
  ): Promise<VerificationRow | undefined> {
    const r = await q.query<VerificationRow>(
      `UPDATE ${S}.verifications
          SET code_hmac = $4, challenge_expires_at = $5, resend_count = resend_count + 1, code_sent_at = $6, updated_at = $6
        WHERE id = $1 AND tenant_id = $2 AND environment = $3 AND status = 'pending' AND challenge_expires_at > $6
          AND resend_count < $7 AND COALESCE(code_sent_at, created_at) <= $8
        RETURNING *`,
      [v.id, v.tenant_id, v.environment, next.codeHmac, next.expiresAt, at, rules.maxResends, new Date(at.getTime() - rules.minGapMs)],
    );
    return r.rows[0];
  }

  /**
   * Undoes a resend whose email could not be sent (or that a send limit refused): the previous
   * code, expiry and counters come back, but only if the row still holds the code this resend
   * wrote (nothing happened since); the test message the resend stored, if any, goes with it.
   */
  async undoResentCode(before: VerificationRow, written: VerificationRow, testMessageId?: string): Promise<void> {
    if (testMessageId) {
      await this.db.query(`DELETE FROM ${S}.test_messages WHERE id = $1 AND tenant_id = $2 AND environment = 'test'`, [testMessageId, before.tenant_id]);
    }
    await this.db.query(
      `UPDATE ${S}.verifications
          SET code_hmac = $5, challenge_expires_at = $6, resend_count = $7, code_sent_at = $8, updated_at = $9
        WHERE id = $1 AND tenant_id = $2 AND environment = $3 AND code_hmac = $4 AND status = 'pending'`,
      [
        before.id, before.tenant_id, before.environment, written.code_hmac,
        before.code_hmac, before.challenge_expires_at, before.resend_count, before.code_sent_at, before.updated_at,
      ],
    );
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

  /** A page of the scope's test messages, newest first, optionally of one verification. */
  async testMessages(scope: Scope, f: { verificationId?: string; limit: number; offset: number }): Promise<{ rows: TestMessageRow[]; total: number }> {
    const params: unknown[] = [scope.tenantId, scope.env, f.verificationId ?? null];
    const w = `tenant_id = $1 AND environment = $2 AND ($3::text IS NULL OR verification_id = $3)`;
    const [rows, count] = await Promise.all([
      this.db.query<TestMessageRow>(`SELECT * FROM ${S}.test_messages WHERE ${w} ORDER BY created_at DESC, id DESC LIMIT ${f.limit} OFFSET ${f.offset}`, params),
      this.db.query<{ total: number }>(`SELECT count(*)::int AS total FROM ${S}.test_messages WHERE ${w}`, params),
    ]);
    return { rows: rows.rows, total: count.rows[0].total };
  }

  /**
   * Verified users of a scope (users.ts says which verifications count): a page of groups by
   * external_user_id, newest last_verified_at first, with the number of groups. One GROUP BY over
   * the verifications_verified_users index; the total comes from a window over the groups.
   */
  async verifiedUsers(scope: Scope, limit: number, offset: number): Promise<{ rows: UserSummaryRow[]; total: number }> {
    const params = [scope.tenantId, scope.env];
    const r = await this.db.query<UserSummaryRow & { total: number }>(
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
    const c = await this.db.query<{ total: number }>(
      `SELECT count(DISTINCT external_user_id)::int AS total FROM ${S}.verifications
        WHERE tenant_id = $1 AND environment = $2 AND status = 'verified' AND external_user_id IS NOT NULL`,
      params,
    );
    return { rows: [], total: c.rows[0].total };
  }

  /** The summary of one verified user of a scope, or undefined. */
  async verifiedUser(scope: Scope, externalUserId: string): Promise<UserSummaryRow | undefined> {
    const r = await this.db.query<UserSummaryRow>(
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
  async userVerifications(scope: Scope, externalUserIds: string[], statuses: readonly string[], now: Date): Promise<UserVerificationRow[]> {
    if (externalUserIds.length === 0) return [];
    const r = await this.db.query<UserVerificationRow>(
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
}

// ---- verification requests -------------------------------------------------------------------

export type RequestStatus = "pending" | "partial" | "completed" | "expired" | "cancelled";
export type AssetStatus = "pending" | "in_progress" | "verified" | "failed" | "expired";

export interface RequestRow {
  id: string;
  tenant_id: string;
  environment: "live" | "test";
  status: RequestStatus;
  reference_id: string | null;
  action_type: string;
  action_title: string | null;
  action_description: string | null;
  redirect_url: string | null;
  callback_url: string | null;
  partial_ok: boolean;
  external_user_id: string | null;
  client_metadata: Record<string, unknown> | null;
  created_at: Date;
  updated_at: Date;
  expires_at: Date;
  completed_at: Date | null;
  cancelled_at: Date | null;
  /** Seconds: proofs reused for this request must have been verified at most this long before it was created. */
  max_proof_age: number | null;
}

export interface RequestAssetRow {
  request_id: string;
  idx: number;
  type: string;
  identifier: string | null;
  channel: string | null;
  allowed_channels: string[] | null;
  required: boolean;
  status: AssetStatus;
  verification_id: string | null;
}

/** An asset with its verification's current status and proof (when it has one). */
export interface RequestAssetView extends RequestAssetRow {
  /** Times the asset was started (its verification made); past the most allowed the asset has failed. */
  starts: number;
  v_status: Status | null;
  v_verified_at: Date | null;
  proof_token: string | null;
  proof_expires_at: Date | null;
}

export type RequestView = RequestRow & { assets: RequestAssetView[] };

/** What the domain decided for one request; the store writes it in the caller's transaction. */
export interface RequestChange {
  status: RequestStatus;
  assets: { idx: number; status: AssetStatus }[];
  events: OutboxEvent[];
  /** Expire the request's pending verifications (cancel, expiry). */
  expireVerifications?: boolean;
}

export type Decide = (r: RequestView) => RequestChange | undefined;

export interface RequestListFilter {
  status?: string;
  referenceId?: string;
  limit: number;
  offset: number;
}

const OPEN_REQUEST = `status IN ('pending', 'partial')`;

export class RequestStore {
  constructor(private readonly db: Database) {}

  async insert(r: RequestRow, assets: RequestAssetRow[]): Promise<void> {
    await this.db.tx(async (q) => {
      await q.query(
        `INSERT INTO ${S}.verification_requests (id, tenant_id, environment, status, reference_id, action_type, action_title, action_description,
           redirect_url, callback_url, partial_ok, external_user_id, client_metadata, created_at, updated_at, expires_at, max_proof_age)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`,
        [
          r.id, r.tenant_id, r.environment, r.status, r.reference_id, r.action_type, r.action_title, r.action_description, r.redirect_url,
          r.callback_url, r.partial_ok, r.external_user_id, r.client_metadata === null ? null : JSON.stringify(r.client_metadata),
          r.created_at, r.updated_at, r.expires_at, r.max_proof_age,
        ],
      );
      for (const a of assets) {
        await q.query(
          `INSERT INTO ${S}.verification_request_assets (request_id, idx, type, identifier, channel, allowed_channels, required, status, verification_id, starts)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, CASE WHEN $9::text IS NULL THEN 0 ELSE 1 END)`,
          [a.request_id, a.idx, a.type, a.identifier, a.channel, a.allowed_channels, a.required, a.status, a.verification_id],
        );
      }
    });
  }

  private async withAssets(q: Queryable, rows: RequestRow[]): Promise<RequestView[]> {
    if (!rows.length) return [];
    const a = await q.query<RequestAssetView>(
      `SELECT a.*, v.status AS v_status, v.verified_at AS v_verified_at, v.proof_token, v.proof_expires_at
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
      this.db.query<RequestRow>(`SELECT * FROM ${S}.verification_requests WHERE ${w} ORDER BY created_at DESC, id DESC LIMIT ${f.limit} OFFSET ${f.offset}`, params),
      this.db.query<{ total: number }>(`SELECT count(*)::int AS total FROM ${S}.verification_requests WHERE ${w}`, params),
    ]);
    return { rows: await this.withAssets(this.db, rows.rows), total: count.rows[0].total };
  }

  /** The requests that have an asset driven by this verification. */
  async requestIdsOf(q: Queryable, verificationId: string): Promise<string[]> {
    const r = await q.query<{ request_id: string }>(`SELECT DISTINCT request_id FROM ${S}.verification_request_assets WHERE verification_id = $1`, [verificationId]);
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
        await appendEvents(q, S, v.rows.flatMap((row) => statusEvents(row, "pending", at)), at);
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
      const r = await q.query(
        `SELECT 1 FROM ${S}.verification_requests WHERE id = $1 AND tenant_id = $2 AND environment = $3 AND ${OPEN_REQUEST} FOR UPDATE`,
        [id, scope.tenantId, scope.env],
      );
      if (!r.rowCount) return false;
      const prev = await q.query<{ verification_id: string | null }>(
        `SELECT verification_id FROM ${S}.verification_request_assets WHERE request_id = $1 AND idx = $2`,
        [id, idx],
      );
      await q.query(
        `UPDATE ${S}.verification_request_assets SET identifier = $3, channel = $4, verification_id = $5, status = 'in_progress'
          WHERE request_id = $1 AND idx = $2`,
        [id, idx, a.identifier, a.channel, a.verificationId],
      );
      // a restart replaces the asset's verification: the one it had stops (its code no longer counts)
      const old = prev.rows[0]?.verification_id;
      if (old && old !== a.verificationId) {
        const v = await q.query<VerificationRow>(
          `UPDATE ${S}.verifications SET status = 'expired', updated_at = $2 WHERE id = $1 AND status = 'pending' RETURNING *`,
          [old, at],
        );
        await appendEvents(q, S, v.rows.flatMap((row) => statusEvents(row, "pending", at)), at);
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
      const r = await q.query(
        `SELECT 1 FROM ${S}.verification_requests WHERE id = $1 AND tenant_id = $2 AND environment = $3 AND ${OPEN_REQUEST} FOR UPDATE`,
        [id, scope.tenantId, scope.env],
      );
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
        await appendEvents(q, S, v.rows.flatMap((row) => statusEvents(row, "pending", at)), at);
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

  /**
   * The verifications of a scope's external user whose proof may be reused for an asset: same
   * type, same canonical identifier (any, when null), one of `channels` (any, when null),
   * verified by their own challenge (a reused proof is never reused again), unrevoked, the proof
   * valid past `minProofExpiry`. Newest verified first; at most 20.
   */
  async reuseCandidates(
    scope: Scope,
    f: { externalUserId: string; type: string; canonical: string | null; channels: string[] | null; minProofExpiry: Date },
  ): Promise<ReuseCandidateRow[]> {
    const r = await this.db.query<ReuseCandidateRow>(
      `SELECT id, type, channel, identifier, identifier_canonical, verified_at, proof_expires_at
         FROM ${S}.verifications
        WHERE tenant_id = $1 AND environment = $2 AND external_user_id = $3 AND type = $4 AND status = 'verified'
          AND method IS DISTINCT FROM 'reused_proof' AND proof_token IS NOT NULL AND proof_expires_at > $5 AND revoked_at IS NULL
          AND ($6::text IS NULL OR identifier_canonical = $6) AND ($7::text[] IS NULL OR channel = ANY($7::text[]))
        ORDER BY verified_at DESC, id DESC LIMIT 20`,
      [scope.tenantId, scope.env, f.externalUserId, f.type, f.minProofExpiry, f.canonical, f.channels],
    );
    return r.rows;
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
      const locked = await q.query<RequestRow>(
        `SELECT * FROM ${S}.verification_requests WHERE id = $1 AND tenant_id = $2 AND environment = $3 FOR UPDATE`,
        [requestId, scope.tenantId, scope.env],
      );
      const [r] = await this.withAssets(q, locked.rows);
      const src = await q.query(
        `SELECT 1 FROM ${S}.verifications WHERE id = $1 AND tenant_id = $2 AND environment = $3 AND status = 'verified' FOR SHARE`,
        [v.reused_from, scope.tenantId, scope.env],
      );
      check(r, src.rowCount === 1);
      await q.query(
        `INSERT INTO ${S}.verifications (id, tenant_id, environment, type, channel, identifier, identifier_canonical, status, code_hmac,
           challenge_expires_at, instruction, deep_link, challenge_message, max_attempts, client_metadata, external_user_id, proof_expires_in,
           created_at, updated_at, verified_at, proof_token, proof_expires_at, method, reused_from)
         VALUES ($1, $2, $3, $4, $5, $6, $7, 'verified', NULL, $8, $9, NULL, NULL, $10, $11, $12, $13, $14, $14, $14, $15, $16, $17, $18)`,
        [
          v.id, v.tenant_id, v.environment, v.type, v.channel, v.identifier, v.identifier_canonical, v.challenge_expires_at, v.instruction,
          v.max_attempts, v.client_metadata === null ? null : JSON.stringify(v.client_metadata), v.external_user_id, v.proof_expires_in,
          at, v.proof_token, v.proof_expires_at, v.method, v.reused_from,
        ],
      );
      const pending: VerificationRow = { ...v, status: "pending", verified_at: null, proof_token: null, proof_expires_at: null };
      await appendEvents(q, S, [...statusEvents(pending, null, at), ...statusEvents(v, "pending", at)], at);
      await q.query(
        `UPDATE ${S}.verification_request_assets SET identifier = $3, channel = $4, verification_id = $5, status = 'in_progress'
          WHERE request_id = $1 AND idx = $2`,
        [requestId, idx, v.identifier, v.channel, v.id],
      );
      const applied = await this.apply(q, requestId, decide, at, scope);
      return applied!.after ?? applied!.before;
    });
  }
}

/** A verification whose proof may be reused (RequestStore.reuseCandidates). */
export interface ReuseCandidateRow {
  id: string;
  type: string;
  channel: string;
  identifier: string;
  identifier_canonical: string;
  verified_at: Date;
  proof_expires_at: Date;
}
