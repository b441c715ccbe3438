import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { WebhookSecretCreatedSchema, WebhookSecretRotatedSchema } from "@icv/contracts/gen/icv/events/v1/tenant_events_pb.ts";
import { appendEvent, newId, outboxEvent, tracingEnabled, type Database, type EnvName, type PersonalData, type Queryable, type Scope } from "@icv/platform";
import { DEFAULT_DISABLE_AFTER_MS, disabledReason, shouldDisable, streakChanges, type StreakChange } from "./endpoint-health.ts";
import type { PlannedDelivery } from "./payload.ts";
import { sealBody } from "./store/sealing.ts";

const S = "webhook";

export type DeliveryStatus = "pending" | "delivered" | "failed";

export interface AttemptLogEntry {
  attempt: number;
  at: string;
  status?: number;
  error?: string;
  duration_ms: number;
  /** The delivery log's other entries (not attempts): the delivery ended failed, or its endpoint was disabled. */
  event?: "attempt.exhausted" | "endpoint.disabled";
  reason?: string;
}

export interface DeliveryRow {
  id: string;
  tenant_id: string;
  environment: EnvName;
  event_id: string;
  event_type: string;
  url: string;
  verification_request_id: string | null;
  verification_id: string | null;
  payload: string;
  request_headers: Record<string, string>;
  status: DeliveryStatus;
  attempts: number;
  max_attempts: number;
  response_status: number | null;
  response_body: string | null;
  error_message: string | null;
  attempt_log: AttemptLogEntry[];
  next_retry_at: Date | null;
  last_attempt_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** A claimed row with what its sender needs: the body and the tenant's live secrets. */
export interface DeliveryJob {
  id: string;
  tenant_id: string;
  environment: EnvName;
  url: string;
  payload: string;
  attempts: number;
  max_attempts: number;
  lease_token: string;
  secret: string | null;
  previous_secret: string | null;
  previous_expires_at: Date | null;
  /** The traceparent of the event the delivery was made for (claimed while tracing is on; null when it had none). */
  traceparent?: string | null;
}

/** The outcome of one attempt, written back by the sender that held the lease. */
export interface AttemptResult {
  id: string;
  leaseToken: string;
  status: DeliveryStatus;
  responseStatus: number | null;
  responseBody: string | null;
  errorMessage: string | null;
  entry: AttemptLogEntry;
  /** Log entries written after the attempt's (attempt.exhausted when it ended the delivery failed). */
  notices?: AttemptLogEntry[];
  nextRetryAt: Date | null;
  headers: Record<string, string>;
  at: Date;
}

export interface SecretRow {
  environment: EnvName;
  secret: string;
  created_at: Date;
  previous_secret: string | null;
  previous_expires_at: Date | null;
}

export interface EndpointRow {
  environment: EnvName;
  url: string;
  updated_at: Date;
  failing_since: Date | null;
  disabled_at: Date | null;
  disabled_reason: string | null;
}

const ENDPOINT_COLUMNS = "environment, url, updated_at, failing_since, disabled_at, disabled_reason";

export interface DeliveryFilter {
  status?: string;
  eventType?: string;
  verificationRequestId?: string;
  verificationIds?: string[];
  limit: number;
  offset: number;
}

/** An endpoint that a batch of results disabled (for the deliverer's log). */
export interface DisabledEndpoint {
  tenant_id: string;
  environment: EnvName;
  failing_since: Date;
}

/** What the deliverer needs of the store (a bench or test may bring its own). */
export interface DeliveryQueue {
  claimDue(now: Date, leaseUntil: Date, leaseToken: string, limit: number): Promise<DeliveryJob[]>;
  /** Writes the results; answers the endpoints they disabled, if the queue tracks endpoint health. */
  recordResults(results: AttemptResult[]): Promise<DisabledEndpoint[] | void>;
}

const LIST_COLUMNS = `id, tenant_id, environment, event_id, event_type, url, verification_request_id, verification_id, status,
  attempts, max_attempts, response_status, created_at, updated_at, error_message, last_attempt_at, next_retry_at`;

const secretHead = (tenantId: string, env: EnvName) => ({
  aggregateType: "webhook_secret",
  aggregateId: `${tenantId}:${env}`,
  tenantId,
  environment: env,
});

export class WebhookStore implements DeliveryQueue {
  /** disableAfterMs: how long an endpoint may fail every attempt before it is disabled (WEBHOOK_DISABLE_AFTER_MS). */
  constructor(
    private readonly db: Database,
    private readonly opts: { disableAfterMs: number } = { disableAfterMs: DEFAULT_DISABLE_AFTER_MS },
  ) {}

  /** Inserts the secrets that do not exist yet (with their events) and answers the stored ones. */
  async ensureSecrets(tenantId: string, fresh: Record<EnvName, string>, at: Date): Promise<Record<EnvName, string>> {
    return this.db.tx(async (q) => {
      for (const env of ["live", "test"] as const) await WebhookStore.ensureSecret(q, tenantId, env, fresh[env], at);
      const rows = await q.query<{ environment: EnvName; secret: string }>(`SELECT environment, secret FROM ${S}.secrets WHERE tenant_id = $1`, [tenantId]);
      return Object.fromEntries(rows.rows.map((r) => [r.environment, r.secret])) as Record<EnvName, string>;
    });
  }

  /** Makes one environment's secret inside a transaction unless it exists (a tenant made without them). */
  static async ensureSecret(q: Queryable, tenantId: string, env: EnvName, fresh: string, at: Date): Promise<void> {
    const r = await q.query(`INSERT INTO ${S}.secrets (tenant_id, environment, secret, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, [
      tenantId,
      env,
      fresh,
      at,
    ]);
    if (r.rowCount === 1) {
      await appendEvent(q, S, outboxEvent("webhook_secret.created", secretHead(tenantId, env), create(WebhookSecretCreatedSchema, { tenantId })), at);
    }
  }

  /** The new secret becomes current; the current one signs alongside it until previousUntil. */
  async rotateSecret(tenantId: string, env: EnvName, fresh: string, at: Date, previousUntil: Date): Promise<SecretRow | undefined> {
    return this.db.tx(async (q) => {
      const r = await q.query<SecretRow>(
        `UPDATE ${S}.secrets SET previous_secret = secret, previous_expires_at = $4, secret = $3, created_at = $5
          WHERE tenant_id = $1 AND environment = $2
          RETURNING environment, secret, created_at, previous_secret, previous_expires_at`,
        [tenantId, env, fresh, previousUntil, at],
      );
      if (!r.rows[0]) return undefined;
      const rotated = create(WebhookSecretRotatedSchema, { tenantId, previousExpiresAt: timestampFromDate(previousUntil) });
      await appendEvent(q, S, outboxEvent("webhook_secret.rotated", secretHead(tenantId, env), rotated), at);
      return r.rows[0];
    });
  }

  async secrets(tenantId: string): Promise<SecretRow[]> {
    const r = await this.db.query<SecretRow>(
      `SELECT environment, secret, created_at, previous_secret, previous_expires_at FROM ${S}.secrets WHERE tenant_id = $1`,
      [tenantId],
    );
    return r.rows;
  }

  async setEndpoint(tenantId: string, env: EnvName, url: string, at: Date): Promise<void> {
    await this.db.query(
      `INSERT INTO ${S}.endpoints (tenant_id, environment, url, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
       ON CONFLICT (tenant_id, environment) DO UPDATE SET url = EXCLUDED.url, updated_at = EXCLUDED.updated_at,
         failing_since = NULL, disabled_at = NULL, disabled_reason = NULL`,
      [tenantId, env, url, at],
    );
  }

  /** Answers the removed URL, or undefined when none was set. */
  async removeEndpoint(tenantId: string, env: EnvName): Promise<string | undefined> {
    const r = await this.db.query<{ url: string }>(`DELETE FROM ${S}.endpoints WHERE tenant_id = $1 AND environment = $2 RETURNING url`, [tenantId, env]);
    return r.rows[0]?.url;
  }

  async endpoints(tenantId: string): Promise<EndpointRow[]> {
    const r = await this.db.query<EndpointRow>(`SELECT ${ENDPOINT_COLUMNS} FROM ${S}.endpoints WHERE tenant_id = $1`, [tenantId]);
    return r.rows;
  }

  /** A disabled endpoint back on, its failure streak forgotten; undefined when none is set. */
  async enableEndpoint(tenantId: string, env: EnvName): Promise<EndpointRow | undefined> {
    const r = await this.db.query<EndpointRow>(
      `UPDATE ${S}.endpoints SET failing_since = NULL, disabled_at = NULL, disabled_reason = NULL WHERE tenant_id = $1 AND environment = $2 RETURNING ${ENDPOINT_COLUMNS}`,
      [tenantId, env],
    );
    return r.rows[0];
  }

  /** The endpoint URLs of several tenant environments (`tenant:env` keys), one statement, inside the event consumer's transaction (none while disabled). */
  static async endpointUrls(q: Queryable, scopes: Array<{ tenantId: string; env: EnvName }>): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    if (!scopes.length) return out;
    const r = await q.query<{ tenant_id: string; environment: EnvName; url: string }>(
      `SELECT e.tenant_id, e.environment, e.url FROM ${S}.endpoints e JOIN unnest($1::text[], $2::text[]) AS s(t, env) ON e.tenant_id = s.t AND e.environment = s.env WHERE e.disabled_at IS NULL`,
      [scopes.map((s) => s.tenantId), scopes.map((s) => s.env)],
    );
    for (const row of r.rows) out.set(`${row.tenant_id}:${row.environment}`, row.url);
    return out;
  }

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
}
