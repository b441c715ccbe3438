/**
 * The SQL of redaction, export and retention (DECISIONS.md, "Personal data: at rest, retention,
 * erasure, export"; the use cases are in verifications/redact.ts).
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { VerificationRedactedSchema } from "@icv/contracts/gen/icv/events/v1/verification_events_pb.ts";
import { appendEvents, outboxEvent, writeWithEvents, type Queryable, type Scope, type SealingDatabase } from "@icv/platform";
import { statusEvents } from "../events.ts";
import type { VerificationRow } from "./rows.ts";

const S = "verification";

/**
 * A stored event payload without its personal parts: client_metadata and external_user_id null
 * where the message has them (completed, suspended, reinstated), no sealed client_metadata, the
 * proof without its SD-JWT VC.
 */
const UNPERSONAL = (p: string) =>
  `((CASE WHEN ${p} ? 'client_metadata' THEN ${p} || jsonb_build_object('client_metadata', NULL, 'external_user_id', NULL) ELSE ${p} END) - 'sealed_client_metadata') #- '{proof,sd_jwt_vc}'`;

/** Who is redacted: one verification, or every verification of an external user. */
export type RedactionTarget = { id: string } | { externalUserId: string };

/** Why: the redact route, the user-wide route, or the retention sweeper (the event's reason). */
export type RedactionReason = "request" | "user_request" | "retention";

/** A request membership of a verification (export). */
export interface MembershipRow {
  request_id: string;
  verification_id: string;
  idx: number;
  status: string;
  created_at: Date;
}

/** The blind index of an external user id (what stays of it on a redacted row). */
export const externalUserIndex = (db: SealingDatabase, externalUserId: string) => db.personalData.index("external_user", externalUserId);

export class RedactionStore {
  constructor(private readonly db: SealingDatabase) {}

  /** The scope's verifications of a target, redacted ones included, oldest first. */
  async targets(scope: Scope, t: RedactionTarget, q: Queryable = this.db): Promise<VerificationRow[]> {
    const r =
      "id" in t
        ? await q.query<VerificationRow>(`SELECT * FROM ${S}.verifications WHERE id = $1 AND tenant_id = $2 AND environment = $3`, [
            t.id,
            scope.tenantId,
            scope.env,
          ])
        : await q.query<VerificationRow>(
            `SELECT * FROM ${S}.verifications WHERE tenant_id = $1 AND environment = $2 AND (external_user_id = $3 OR external_user_index = $4)
              ORDER BY created_at, id`,
            [scope.tenantId, scope.env, t.externalUserId, externalUserIndex(this.db, t.externalUserId)],
          );
    return r.rows;
  }

  /** Cancels a pending verification before its redaction: expired, with its status event; undefined when it was no longer pending. */
  async cancelPending(v: VerificationRow, at: Date): Promise<VerificationRow | undefined> {
    const r = await writeWithEvents<VerificationRow>(
      this.db,
      S,
      `UPDATE ${S}.verifications SET status = 'expired', updated_at = $4 WHERE id = $1 AND tenant_id = $2 AND environment = $3 AND status = 'pending' RETURNING *`,
      [v.id, v.tenant_id, v.environment, at],
      statusEvents(this.db.personalData, { ...v, status: "expired", updated_at: at }, "pending", at),
      at,
    );
    return r.rows[0];
  }

  /** Marks rows whose proof this redaction revoked (the `revoked` count of every later answer). */
  async markRevokedByRedaction(scope: Scope, ids: string[]): Promise<void> {
    if (!ids.length) return;
    await this.db.query(`UPDATE ${S}.verifications SET redacted_revoked = true WHERE id = ANY($1::text[]) AND tenant_id = $2 AND environment = $3`, [
      ids,
      scope.tenantId,
      scope.env,
    ]);
  }

  /**
   * Erases the personal data of the scope's verifications `ids` that are not redacted yet, with one
   * verification.redacted event each, in `q`'s transaction: identifier and instruction emptied,
   * client_metadata, challenge message, deep link, code lookup, blind index and SD-JWT VC cleared,
   * external_user_id kept only as its blind index; their test messages deleted, their request
   * assets' identifiers cleared and the client_metadata of their stored events nulled. Answers the ids it redacted.
   */
  async redact(q: Queryable, scope: Scope, ids: string[], at: Date, reason: RedactionReason): Promise<string[]> {
    if (!ids.length) return [];
    const pd = this.db.personalData;
    const r = await q.query<Pick<VerificationRow, "id" | "type" | "channel" | "status" | "callback_url" | "external_user_id"> & { redacted_revoked: boolean }>(
      `SELECT id, type, channel, status, callback_url, external_user_id, redacted_revoked FROM ${S}.verifications
        WHERE id = ANY($1::text[]) AND tenant_id = $2 AND environment = $3 AND redacted_at IS NULL FOR UPDATE`,
      [ids, scope.tenantId, scope.env],
    );
    if (!r.rows.length) return [];
    const done = r.rows.map((v) => v.id);
    for (const v of r.rows)
      await q.query(
        `UPDATE ${S}.verifications SET identifier = '', identifier_canonical = '', instruction = '', challenge_message = NULL, client_metadata = NULL,
                deep_link = NULL, code_lookup = NULL, identifier_index = NULL, external_user_id = NULL, external_user_index = $2, redacted_at = $3,
                proof_sd_jwt_vc = NULL
          WHERE id = $1`,
        [v.id, v.external_user_id === null ? null : pd.index("external_user", v.external_user_id), at],
      );
    await q.query(`DELETE FROM ${S}.test_messages WHERE verification_id = ANY($1::text[]) AND tenant_id = $2`, [done, scope.tenantId]);
    await q.query(`UPDATE ${S}.verification_request_assets SET identifier = NULL WHERE verification_id = ANY($1::text[])`, [done]);
    // the events already stored keep no client_metadata, external user or SD-JWT VC (it discloses the
    // identifier); the outbox is read by SSE replays and the relay
    await q.query(
      `UPDATE ${S}.outbox SET payload = ${UNPERSONAL("payload")}
        WHERE aggregate_id = ANY($1::text[]) AND aggregate_type = 'verification' AND (payload ? 'client_metadata' OR payload ? 'proof')`,
      [done],
    );
    await appendEvents(
      q,
      S,
      r.rows.map((v) =>
        outboxEvent(
          "verification.redacted",
          { aggregateType: "verification", aggregateId: v.id, tenantId: scope.tenantId, environment: scope.env },
          create(VerificationRedactedSchema, {
            verificationId: v.id,
            type: v.type,
            channel: v.channel,
            status: v.status,
            redactedAt: timestampFromDate(at),
            proofRevoked: v.redacted_revoked,
            reason,
            callbackUrl: v.callback_url ?? undefined,
          }),
        ),
      ),
      at,
    );
    return done;
  }

  /** The request memberships of these verifications (export). */
  async memberships(ids: string[]): Promise<MembershipRow[]> {
    if (!ids.length) return [];
    const r = await this.db.query<MembershipRow>(
      `SELECT a.request_id, a.verification_id, a.idx, r.status, r.created_at FROM ${S}.verification_request_assets a
         JOIN ${S}.verification_requests r ON r.id = a.request_id WHERE a.verification_id = ANY($1::text[]) ORDER BY r.created_at, a.request_id, a.idx`,
      [ids],
    );
    return r.rows;
  }

  /** The scope's retention in days (0: none). */
  async retention(scope: Scope): Promise<number> {
    const r = await this.db.query<{ days: number }>(`SELECT days FROM ${S}.retention WHERE tenant_id = $1 AND environment = $2`, [scope.tenantId, scope.env]);
    return r.rows[0]?.days ?? 0;
  }

  /** Sets (1–3650) or clears (0) the scope's retention. */
  async setRetention(scope: Scope, days: number, at: Date): Promise<void> {
    if (days === 0) await this.db.query(`DELETE FROM ${S}.retention WHERE tenant_id = $1 AND environment = $2`, [scope.tenantId, scope.env]);
    else
      await this.db.query(
        `INSERT INTO ${S}.retention (tenant_id, environment, days, updated_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (tenant_id, environment) DO UPDATE SET days = EXCLUDED.days, updated_at = EXCLUDED.updated_at`,
        [scope.tenantId, scope.env, days, at],
      );
  }

  /**
   * Redacts up to `batch` settled verifications past their scope's retention, oldest first, in one
   * transaction that only one replica runs at a time (a transaction-scoped advisory lock; another
   * replica's sweep answers 0). Answers how many it redacted.
   */
  async redactExpired(now: Date, batch = 200): Promise<number> {
    // the common case (no scope has a retention) costs one read, no transaction
    if ((await this.db.query(`SELECT 1 FROM ${S}.retention LIMIT 1`)).rowCount === 0) return 0;
    return this.db.tx(async (q) => {
      const lock = await q.query<{ ok: boolean }>(`SELECT pg_try_advisory_xact_lock(hashtext('icv verification retention')) AS ok`);
      if (!lock.rows[0]?.ok) return 0;
      const due = await q.query<{ id: string; tenant_id: string; environment: "live" | "test" }>(
        `SELECT v.id, v.tenant_id, v.environment FROM ${S}.retention t
           CROSS JOIN LATERAL (
             SELECT id, tenant_id, environment FROM ${S}.verifications
              WHERE tenant_id = t.tenant_id AND environment = t.environment AND redacted_at IS NULL AND status <> 'pending'
                AND created_at < $1::timestamptz - make_interval(days => t.days)
              ORDER BY created_at LIMIT ${batch}) v
          LIMIT ${batch}`,
        [now],
      );
      const byScope = new Map<string, string[]>();
      for (const v of due.rows) byScope.set(`${v.tenant_id}\u0000${v.environment}`, [...(byScope.get(`${v.tenant_id}\u0000${v.environment}`) ?? []), v.id]);
      let n = 0;
      for (const [key, ids] of byScope) {
        const [tenantId, env] = key.split("\u0000") as [string, "live" | "test"];
        n += (await this.redact(q, { tenantId, env }, ids, now, "retention")).length;
      }
      return n;
    });
  }
}
