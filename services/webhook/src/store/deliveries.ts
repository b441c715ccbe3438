/** Deliveries: the queue the deliverer claims from, their attempts and the endpoint health those attempts move (the deliveries table). */
import { newId, tracingEnabled, type Database, type EnvName, type EventRecord, type PersonalData, type Queryable, type Scope } from "@icv/platform";
import { DEFAULT_DISABLE_AFTER_MS, disabledReason, shouldDisable, streakChanges, type StreakChange } from "../endpoint-health.ts";
import type { PlannedDelivery } from "../payload.ts";
import type { AttemptResult, DeliveryFilter, DeliveryJob, DeliveryQueue, DeliveryRow, DeliveryStatus, DisabledEndpoint } from "./rows.ts";
import { sealBody } from "./sealing.ts";

const S = "webhook";

const LIST_COLUMNS = `id, tenant_id, environment, event_id, event_type, url, verification_request_id, verification_id, status,
  attempts, max_attempts, response_status, created_at, updated_at, error_message, last_attempt_at, next_retry_at`;

export class DeliveryStore implements DeliveryQueue {
  /** disableAfterMs: how long an endpoint may fail every attempt before it is disabled (WEBHOOK_DISABLE_AFTER_MS). */
  constructor(
    private readonly db: Database,
    private readonly opts: { disableAfterMs: number } = { disableAfterMs: DEFAULT_DISABLE_AFTER_MS },
  ) {}

  /**
   * Inserts the deliveries of one event, due now; one (event, url) pair is inserted once. Bodies
   * are stored sealed under the current data key (store/sealing.ts). Tracing on, with the event's
   * traceparent (a fourteenth parameter); off, the statement without it.
   */
  static async insertDeliveries(
    q: Queryable,
    planned: PlannedDelivery[],
    maxAttempts: number,
    headers: (id: string) => Record<string, string>,
    at: Date,
    pd: PersonalData,
  ): Promise<string[]> {
    if (!planned.length) return [];
    // one statement for the whole batch: ten parallel arrays, one row each
    const cols: unknown[][] = Array.from({ length: 10 }, () => []);
    for (const d of planned) {
      const id = newId("webhookDelivery", at.getTime());
      [
        id,
        d.tenantId,
        d.environment,
        d.eventId,
        d.eventType,
        d.url,
        d.verificationRequestId,
        d.verificationId,
        sealBody(pd, id, d.payload),
        JSON.stringify(headers(id)),
      ].forEach((v, i) => {
        cols[i].push(v);
      });
    }
    const traced = tracingEnabled();
    await q.query(
      `INSERT INTO ${S}.deliveries (id, tenant_id, environment, event_id, event_type, url, verification_request_id, verification_id, payload,
         request_headers, max_attempts, next_retry_at, created_at, updated_at, key_version${traced ? ", traceparent" : ""})
       SELECT id, t, env, ev, et, url, vr, v, p, h::jsonb, $11::int, $12::timestamptz, $12::timestamptz, $12::timestamptz, $13::int${traced ? ", tp" : ""}
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[]${traced ? ", $14::text[]" : ""}) AS u(id, t, env, ev, et, url, vr, v, p, h${traced ? ", tp" : ""})
       ON CONFLICT (event_id, url) DO NOTHING`,
      traced ? [...cols, maxAttempts, at, pd.currentVersion, planned.map((d) => d.traceparent ?? null)] : [...cols, maxAttempts, at, pd.currentVersion],
    );
    return cols[0] as string[]; // the ids made, in order (one an (event_id, url) conflict skipped names no row)
  }

  /**
   * Leases up to `limit` due pending rows (SKIP LOCKED: concurrent claimers get different rows)
   * until leaseUntil, with the tenants' secrets (and, tracing on, the rows' traceparents). A row
   * whose lease expired (its sender died) is due again.
   */
  async claimDue(now: Date, leaseUntil: Date, leaseToken: string, limit: number): Promise<DeliveryJob[]> {
    const r = await this.db.query<DeliveryJob>(
      `WITH due AS (
         SELECT id FROM ${S}.deliveries
          WHERE status = 'pending' AND next_retry_at <= $1 AND (lease_until IS NULL OR lease_until <= $1)
          ORDER BY next_retry_at LIMIT $4 FOR UPDATE SKIP LOCKED),
       claimed AS (
         UPDATE ${S}.deliveries d SET lease_until = $2, lease_token = $3 FROM due WHERE d.id = due.id
         RETURNING d.id, d.tenant_id, d.environment, d.url, d.payload, d.attempts, d.max_attempts, d.lease_token${tracingEnabled() ? ", d.traceparent" : ""})
       SELECT c.*, s.secret, s.previous_secret, s.previous_expires_at
         FROM claimed c LEFT JOIN ${S}.secrets s ON s.tenant_id = c.tenant_id AND s.environment = c.environment`,
      [now, leaseUntil, leaseToken, limit],
    );
    return r.rows;
  }

  /** Deliveries waiting to be sent (first attempts and retries), for icv_webhook_queue_depth. */
  async pendingCount(): Promise<number> {
    const r = await this.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${S}.deliveries WHERE status = 'pending'`);
    return r.rows[0].n;
  }

  /**
   * Writes attempt outcomes in one statement (a row whose lease was taken over is left alone), and
   * in the same transaction the health of the tenant endpoints they went to.
   */
  async recordResults(results: AttemptResult[]): Promise<DisabledEndpoint[]> {
    if (!results.length) return [];
    const col = <T>(f: (r: AttemptResult) => T) => results.map(f);
    return this.db.tx(async (q) => {
      const written = await q.query<{ id: string; tenant_id: string; environment: string; url: string; status: DeliveryStatus; at: Date }>(
        `UPDATE ${S}.deliveries d SET
         status = r.status, attempts = d.attempts + 1, response_status = r.response_status, response_body = r.response_body,
         error_message = r.error_message, attempt_log = d.attempt_log || jsonb_build_array(r.entry::jsonb) || r.notices::jsonb,
         next_retry_at = r.next_retry_at, last_attempt_at = r.at, request_headers = r.headers::jsonb,
         lease_until = NULL, lease_token = NULL, updated_at = r.at
       FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::text[], $8::timestamptz[], $9::timestamptz[], $10::text[], $11::text[])
         AS r(id, token, status, response_status, response_body, error_message, entry, next_retry_at, at, headers, notices)
       WHERE d.id = r.id AND d.lease_token = r.token
       RETURNING d.id, d.tenant_id, d.environment, d.url, d.status, r.at`,
        [
          col((r) => r.id),
          col((r) => r.leaseToken),
          col((r) => r.status),
          col((r) => r.responseStatus),
          col((r) => r.responseBody),
          col((r) => r.errorMessage),
          col((r) => JSON.stringify(r.entry)),
          col((r) => r.nextRetryAt),
          col((r) => r.at),
          col((r) => JSON.stringify(r.headers)),
          col((r) => JSON.stringify(r.notices ?? [])),
        ],
      );
      const changes = streakChanges(written.rows.map((w) => ({ ...w, delivered: w.status === "delivered" })));
      return changes.length ? this.updateHealth(q, changes, written.rows) : [];
    });
  }

  /** Moves the failure streaks of the batch's tenant endpoints; disables those failing too long. */
  private async updateHealth(
    q: Queryable,
    changes: StreakChange[],
    written: { id: string; tenant_id: string; environment: string; url: string }[],
  ): Promise<DisabledEndpoint[]> {
    const col = <T>(f: (c: StreakChange) => T) => changes.map(f);
    const streaks = await q.query<{ tenant_id: string; environment: EnvName; url: string; failing_since: Date | null }>(
      `UPDATE ${S}.endpoints e SET failing_since = CASE WHEN h.first_failure IS NULL THEN NULL WHEN h.reset THEN h.first_failure
                                                   ELSE COALESCE(e.failing_since, h.first_failure) END
         FROM unnest($1::text[], $2::text[], $3::text[], $4::bool[], $5::timestamptz[]) AS h(tenant_id, environment, url, reset, first_failure)
        WHERE e.tenant_id = h.tenant_id AND e.environment = h.environment AND e.url = h.url AND e.disabled_at IS NULL
        RETURNING e.tenant_id, e.environment, e.url, e.failing_since`,
      [col((c) => c.tenantId), col((c) => c.environment), col((c) => c.url), col((c) => c.reset), col((c) => c.firstFailure)],
    );
    const disabled: DisabledEndpoint[] = [];
    for (const e of streaks.rows) {
      const at = changes.find((c) => c.tenantId === e.tenant_id && c.environment === e.environment && c.url === e.url)!.at;
      if (!shouldDisable(e.failing_since, at, this.opts.disableAfterMs)) continue;
      const ids = written.filter((w) => w.tenant_id === e.tenant_id && w.environment === e.environment && w.url === e.url).map((w) => w.id);
      await this.disableEndpoint(q, e.tenant_id, e.environment, e.url, disabledReason(e.failing_since!, this.opts.disableAfterMs), at, ids);
      disabled.push({ tenant_id: e.tenant_id, environment: e.environment, failing_since: e.failing_since! });
    }
    return disabled;
  }

  /**
   * Disables one endpoint: its pending deliveries end failed, and they and the batch's deliveries
   * that went to it (`ids`) get an endpoint.disabled entry in their log.
   */
  private async disableEndpoint(q: Queryable, tenantId: string, env: EnvName, url: string, reason: string, at: Date, ids: string[]): Promise<void> {
    await q.query(`UPDATE ${S}.endpoints SET disabled_at = $4, disabled_reason = $5 WHERE tenant_id = $1 AND environment = $2 AND url = $3`, [
      tenantId,
      env,
      url,
      at,
      reason,
    ]);
    await q.query(
      `UPDATE ${S}.deliveries SET
         status = 'failed', next_retry_at = NULL, lease_until = NULL, lease_token = NULL, updated_at = $4,
         error_message = CASE WHEN status = 'pending' THEN $5 ELSE error_message END,
         attempt_log = attempt_log || jsonb_build_array(jsonb_build_object('event', 'endpoint.disabled', 'attempt', attempts, 'at', $6::text, 'reason', $5::text, 'duration_ms', 0))
       WHERE tenant_id = $1 AND environment = $2 AND url = $3 AND (status = 'pending' OR id = ANY($7::text[]))`,
      [tenantId, env, url, at, reason, at.toISOString(), ids],
    );
  }

  async list(scope: Scope, f: DeliveryFilter): Promise<{ rows: DeliveryRow[]; total: number }> {
    const where = ["tenant_id = $1", "environment = $2"];
    const params: unknown[] = [scope.tenantId, scope.env];
    const add = (column: string, value: unknown) => {
      params.push(value);
      where.push(`${column} = $${params.length}`);
    };
    if (f.status) add("status", f.status);
    if (f.eventType) add("event_type", f.eventType);
    if (f.verificationRequestId) add("verification_request_id", f.verificationRequestId);
    if (f.verificationIds?.length) where.push(`verification_id = ANY($${params.push(f.verificationIds)}::text[])`);
    const w = where.join(" AND ");
    const [rows, count] = await Promise.all([
      this.db.query<DeliveryRow>(
        `SELECT ${LIST_COLUMNS} FROM ${S}.deliveries WHERE ${w} ORDER BY created_at DESC, id DESC LIMIT ${f.limit} OFFSET ${f.offset}`,
        params,
      ),
      this.db.query<{ total: number }>(`SELECT count(*)::int AS total FROM ${S}.deliveries WHERE ${w}`, params),
    ]);
    return { rows: rows.rows, total: count.rows[0].total };
  }

  async get(scope: Scope, id: string): Promise<DeliveryRow | undefined> {
    const r = await this.db.query<DeliveryRow>(`SELECT * FROM ${S}.deliveries WHERE id = $1 AND tenant_id = $2 AND environment = $3`, [
      id,
      scope.tenantId,
      scope.env,
    ]);
    return r.rows[0];
  }

  async stats(scope: Scope, failedSince: Date): Promise<Record<"total" | DeliveryStatus | "recentFailures24h", number>> {
    const r = await this.db.query<Record<"total" | DeliveryStatus | "recentFailures24h", number>>(
      `SELECT count(*)::int AS total, count(*) FILTER (WHERE status = 'delivered')::int AS delivered,
              count(*) FILTER (WHERE status = 'failed')::int AS failed, count(*) FILTER (WHERE status = 'pending')::int AS pending,
              count(*) FILTER (WHERE status = 'failed' AND updated_at > $3)::int AS "recentFailures24h"
         FROM ${S}.deliveries WHERE tenant_id = $1 AND environment = $2`,
      [scope.tenantId, scope.env, failedSince],
    );
    return r.rows[0];
  }

  /** A failed delivery back to pending with one more attempt, due at `at`; undefined unless it was failed. */
  async requeueFailed(scope: Scope, id: string, at: Date): Promise<DeliveryRow | undefined> {
    const r = await this.db.query<DeliveryRow>(
      `UPDATE ${S}.deliveries SET status = 'pending', max_attempts = attempts + 1, next_retry_at = $4, lease_until = NULL, lease_token = NULL, updated_at = $4
        WHERE id = $1 AND tenant_id = $2 AND environment = $3 AND status = 'failed' RETURNING *`,
      [id, scope.tenantId, scope.env, at],
    );
    return r.rows[0];
  }

  /** The stored bodies (opened) of these redacted verifications' deliveries, but those of their verification.redacted events. */
  static async redactablePayloads(q: Queryable, redacted: EventRecord[]): Promise<Array<{ id: string; payload: string }>> {
    const r = await q.query<{ id: string; payload: string }>(
      `SELECT d.id, d.payload FROM ${S}.deliveries d JOIN unnest($1::text[], $2::text[], $3::text[]) AS x(v, t, env)
           ON d.verification_id = x.v AND d.tenant_id = x.t AND d.environment = x.env
        WHERE d.event_type <> 'verification.redacted'`,
      [redacted.map((e) => e.aggregateId), redacted.map((e) => e.tenantId), redacted.map((e) => e.environment)],
    );
    return r.rows;
  }

  /** Replaces stored bodies, already sealed under key version `keyVersion`. */
  static async replacePayloads(q: Queryable, changed: Array<{ id: string; payload: string }>, keyVersion: number): Promise<void> {
    await q.query(`UPDATE ${S}.deliveries d SET payload = u.p, key_version = $3 FROM unnest($1::text[], $2::text[]) AS u(id, p) WHERE d.id = u.id`, [
      changed.map((d) => d.id),
      changed.map((d) => d.payload),
      keyVersion,
    ]);
  }
}
