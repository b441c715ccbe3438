import {
  appendEvents,
  batched,
  BoundedMap,
  EventCache,
  writeWithEvents,
  type Database,
  type ProofMethod,
  type Queryable,
  type Scope,
  type SealingDatabase,
} from "@icv/platform";
import type { UserSummaryRow, UserVerificationRow } from "./users.ts";
import { statusEvents, suspensionEvent } from "./events.ts";
import { suspensionMove, writeSuspension, type SuspensionMove } from "./suspensions.ts";
import type { EventRow, ListFilter, NewVerification, TestMessageRow, VerificationRow } from "./rows.ts";
import { insertTestMessage, pruneTestMessages, testMessages } from "./test-messages.ts";
import { DomainCheckStore, insertDomainCheck, type NewDomainCheck } from "./domain-checks.ts";
import { userVerifications, verifiedUser, verifiedUsers } from "./users.ts";
import { verificationDatabase } from "./sealing.ts";
import { insertVerification, insertVerifications } from "./verification-insert.ts";
import { RedactionStore, type RedactionReason } from "./redaction.ts";
import { undoResentCode, writeResentCode } from "./resends.ts";
import { writeVerified, writeVerifiedMany, type Completion, type PendingChanges } from "./verified-update.ts";

const S = "verification";

export class VerificationStore {
  /**
   * Settled verifications (verified, failed, expired, revoked) by id. Every later change of such
   * a row is a status change with its verification.status_changed event (revoked is the only move
   * left), so the event drops it: at once in this process (markRevoked), in other workers and
   * replicas when the event arrives (start.ts follows the verification events). Pending rows
   * change without events (attempts, resends) and are read from the database, but for a
   * test-verify of one this process created (`created`).
   */
  readonly settled = new EventCache<VerificationRow>(
    (v) => v.status !== "pending",
    10_000,
    (id) => this.created.delete(id),
  );

  /**
   * Test-mode verifications this process created, kept for their test-verify only (`takeCreated`),
   * which then needs no read of a row just written (issue 33). What test-verify takes from the row
   * is fixed at creation (the asset, the proof's settings); the state it needs, pending, is checked
   * again by the update that completes it. Dropped when taken, by this process's own changes to it
   * (a wrong attempt, an expiry, a completion), and with the settled cache (every status change's
   * event, from any process, but the creation's own).
   */
  private readonly created = new BoundedMap<string, VerificationRow>(10_000);

  /** Domain verifications' check state (domain-checks.ts). */
  readonly checks: DomainCheckStore;

  /** Redaction, export and retention (redaction.ts). */
  readonly redaction: RedactionStore;

  /** Reads answer personal data opened (store/sealing.ts); writes seal it. */
  private readonly db: SealingDatabase;

  /** Creations and completions, each batched (batched(), group commit). */
  private readonly writeCreated: (c: { v: NewVerification; testMessage?: TestMessageRow }) => Promise<VerificationRow>;
  private readonly writeVerified: (c: Completion) => Promise<PendingChanges | undefined>;

  constructor(db: Database) {
    this.db = verificationDatabase(db);
    const pd = this.db.personalData;
    this.writeCreated = batched(db, {
      one: (c) => insertVerification(this.db, pd, c.v, c.testMessage),
      many: (cs) => insertVerifications(this.db, pd, cs),
      key: (c) => c.v.id,
    });
    this.writeVerified = batched(db, { one: (c) => writeVerified(this.db, c), many: (cs) => writeVerifiedMany(this.db, cs), key: (c) => c.after.id });
    this.checks = new DomainCheckStore(this.db);
    this.redaction = new RedactionStore(this.db);
  }

  /**
   * Stores a new verification with its creation event; a test-mode message (testMessageOf in
   * verifications.ts) goes in the same statement, a domain verification's check state in the
   * same transaction.
   */
  async insert(v: NewVerification, testMessage?: TestMessageRow, domain?: NewDomainCheck): Promise<VerificationRow> {
    if (domain)
      return this.keep(
        await this.db.tx(async (q) => {
          const row = await insertVerification(q, this.db.personalData, v, testMessage);
          await insertDomainCheck(q, row, domain);
          return row;
        }),
      );
    return this.keep(await this.writeCreated({ v, testMessage }));
  }

  private keep(row: VerificationRow): VerificationRow {
    if (row.environment === "test") this.created.set(row.id, row);
    return row;
  }

  /**
   * The test-mode verification this process created and nothing has taken or changed since, once,
   * while its challenge runs at `now`; undefined otherwise (read it: a run-out one is expired there).
   */
  takeCreated(scope: Scope, id: string, now: Date): VerificationRow | undefined {
    const v = this.created.get(id);
    if (!v || v.tenant_id !== scope.tenantId || v.environment !== scope.env || v.challenge_expires_at <= now) return undefined;
    this.created.delete(id);
    return v;
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

  /** Erases the personal data of these verifications of the scope (redaction.ts) and forgets their cached rows; answers the ids it redacted now. */
  async redactIds(scope: Scope, ids: string[], at: Date, reason: RedactionReason): Promise<string[]> {
    const done = await this.db.tx((q) => this.redaction.redact(q, scope, ids, at, reason));
    for (const id of ids) this.settled.drop(id);
    return done;
  }

  /** Forgets the inbound attempt keys older than `before`; answers how many went. */
  async pruneInboundAttempts(before: Date): Promise<number> {
    return (await this.db.query(`DELETE FROM ${S}.inbound_attempts WHERE created_at < $1`, [before])).rowCount ?? 0;
  }

  /** Forgets the test-mode messages written before `before` (the sweeper's housekeeping). */
  pruneTestMessages(before: Date): Promise<number> {
    return pruneTestMessages(this.db, before);
  }

  /** Stores one test-mode message that is not written with a verification (a test session's). */
  async insertTestMessage(m: TestMessageRow): Promise<void> {
    await insertTestMessage(this.db, this.db.personalData, m);
  }

  async get(scope: Scope, id: string): Promise<VerificationRow | undefined> {
    const v = await this.settled.load(id, async () => {
      const r = await this.db.query<VerificationRow>(`SELECT * FROM ${S}.verifications WHERE id = $1 AND tenant_id = $2 AND environment = $3`, [
        id,
        scope.tenantId,
        scope.env,
      ]);
      return r.rows[0];
    });
    // a row cached for one scope is never another's
    return v && v.tenant_id === scope.tenantId && v.environment === scope.env ? v : undefined;
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
    this.created.delete(id);
    return this.db.tx(async (q) => {
      if (messageKey) {
        // a provider message counts once: its key is kept in the same transaction as the count
        const first = await q.query(`INSERT INTO ${S}.inbound_attempts (message_key, verification_id, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, [
          messageKey,
          id,
          at,
        ]);
        if (first.rowCount === 0) {
          const cur = await q.query<VerificationRow>(`SELECT * FROM ${S}.verifications WHERE id = $1 AND tenant_id = $2 AND environment = $3`, [
            id,
            scope.tenantId,
            scope.env,
          ]);
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
      if (v?.status === "failed") await appendEvents(q, S, statusEvents(this.db.personalData, v, "pending", at), at);
      return v;
    });
  }

  /** pending → verified with its proof; undefined when it was no longer pending. */
  async markVerified(
    v: VerificationRow,
    proof: { token: string; expiresAt: Date; verifiedAt?: Date; method: ProofMethod; identifierSalt: string; sdJwtVc?: string },
    at: Date,
  ): Promise<VerificationRow | undefined> {
    this.created.delete(v.id);
    const after: VerificationRow = {
      ...v,
      status: "verified",
      verified_at: proof.verifiedAt ?? at, // the token's: a retry after a crash gets the proof issued before, and its time
      proof_token: proof.token,
      proof_expires_at: proof.expiresAt,
      proof_identifier_salt: proof.identifierSalt || null,
      proof_sd_jwt_vc: proof.sdJwtVc ?? null,
      method: proof.method,
      updated_at: at,
    };
    // answers the row as written, made here, with the columns that may change while pending as the
    // statement found them: reading the wide row back and opening its sealed columns again cost as
    // much as the answer needs (issue 33); sealed columns do not change while pending
    const found = await this.writeVerified({ after, at, events: statusEvents(this.db.personalData, after, "pending", at) });
    return found ? { ...after, ...found } : undefined;
  }

  /** verified or suspended → revoked; undefined when it was neither. `q`: the caller's transaction (the proof.revoked consumer's). */
  async markRevoked(v: VerificationRow, revokedAt: Date, reason: string, q: Queryable = this.db): Promise<VerificationRow | undefined> {
    const after: VerificationRow = { ...v, status: "revoked", revoked_at: revokedAt, revoked_reason: reason, updated_at: revokedAt };
    const r = await writeWithEvents<VerificationRow>(
      q,
      S,
      `UPDATE ${S}.verifications SET status = 'revoked', revoked_at = $4, revoked_reason = $5, updated_at = $4
        WHERE id = $1 AND tenant_id = $2 AND environment = $3 AND status = $6 RETURNING *`,
      [v.id, v.tenant_id, v.environment, revokedAt, reason, v.status],
      statusEvents(this.db.personalData, after, v.status, revokedAt),
      revokedAt,
    );
    this.settled.drop(v.id);
    return r.rows[0];
  }

  /** verified ⇄ suspended with its events (suspensions.ts); `q`: the caller's transaction (the proof events' consumer's). */
  async markSuspension(v: VerificationRow, move: SuspensionMove, q: Queryable = this.db): Promise<VerificationRow | undefined> {
    const { from, after } = suspensionMove(v, move);
    const row = await writeSuspension(q, v, move, [
      ...statusEvents(this.db.personalData, after, from, move.at),
      suspensionEvent(this.db.personalData, after, v),
    ]);
    this.settled.drop(v.id);
    return row;
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
    if (testMessage)
      return this.db.tx(async (q) => {
        const row = await writeResentCode(q, v, next, rules, at);
        if (row) await insertTestMessage(q, this.db.personalData, testMessage);
        return row;
      });
    return writeResentCode(this.db, v, next, rules, at);
  }

  /**
   * Undoes a resend whose email could not be sent (or that a send limit refused): the previous
   * code, expiry and counters come back, but only if the row still holds the code this resend
   * wrote (nothing happened since); the test message the resend stored, if any, goes with it.
   */
  undoResentCode(before: VerificationRow, written: VerificationRow, testMessageId?: string): Promise<void> {
    return undoResentCode(this.db, before, written, testMessageId);
  }

  /** Expires one pending verification whose challenge has run out (read path: never show a stale pending). */
  async expireOne(v: VerificationRow, now: Date): Promise<VerificationRow | undefined> {
    this.created.delete(v.id);
    const r = await writeWithEvents<VerificationRow>(
      this.db,
      S,
      `UPDATE ${S}.verifications SET status = 'expired', updated_at = $4
        WHERE id = $1 AND tenant_id = $2 AND environment = $3 AND status = 'pending' AND challenge_expires_at <= $4 RETURNING *`,
      [v.id, v.tenant_id, v.environment, now],
      statusEvents(this.db.personalData, { ...v, status: "expired", updated_at: now }, "pending", now),
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
      await appendEvents(
        q,
        S,
        r.rows.flatMap((v) => statusEvents(this.db.personalData, v, "pending", now)),
        now,
      );
      return r.rows.length;
    });
  }

  /** A page of the scope's test messages, newest first, optionally of one verification. */
  testMessages(scope: Scope, f: { verificationId?: string; limit: number; offset: number }): Promise<{ rows: TestMessageRow[]; total: number }> {
    return testMessages(this.db, scope, f);
  }

  /** Verified users of a scope (store/users.ts). */
  verifiedUsers(scope: Scope, limit: number, offset: number): Promise<{ rows: UserSummaryRow[]; total: number }> {
    return verifiedUsers(this.db, scope, limit, offset);
  }

  verifiedUser(scope: Scope, externalUserId: string): Promise<UserSummaryRow | undefined> {
    return verifiedUser(this.db, scope, externalUserId);
  }

  userVerifications(scope: Scope, externalUserIds: string[], statuses: readonly string[], now: Date): Promise<UserVerificationRow[]> {
    return userVerifications(this.db, scope, externalUserIds, statuses, now);
  }
}
