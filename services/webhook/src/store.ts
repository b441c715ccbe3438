import { appendEvent, newId, type Database, type EnvName, type Queryable, type Scope } from "@icv/platform";
import type { PlannedDelivery } from "./payload.ts";

const S = "webhook";

export type DeliveryStatus = "pending" | "delivered" | "failed";

export interface AttemptLogEntry {
  attempt: number;
  at: string;
  status?: number;
  error?: string;
  duration_ms: number;
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
}

export interface DeliveryFilter {
  status?: string;
  eventType?: string;
  verificationRequestId?: string;
  limit: number;
  offset: number;
}

/** What the deliverer needs of the store (a bench or test may bring its own). */
export interface DeliveryQueue {
  claimDue(now: Date, leaseUntil: Date, leaseToken: string, limit: number): Promise<DeliveryJob[]>;
  recordResults(results: AttemptResult[]): Promise<void>;
}

const LIST_COLUMNS = `id, tenant_id, environment, event_id, event_type, url, verification_request_id, verification_id, status,
  attempts, max_attempts, response_status, created_at, updated_at`;

export class WebhookStore implements DeliveryQueue {
  constructor(private readonly db: Database) {}

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
    const r = await q.query(`INSERT INTO ${S}.secrets (tenant_id, environment, secret, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, [tenantId, env, fresh, at]);
    if (r.rowCount === 1) {
      await appendEvent(q, S, { aggregateType: "webhook_secret", aggregateId: `${tenantId}:${env}`, eventType: "webhook_secret.created", tenantId, environment: env, payload: { tenant_id: tenantId } }, at);
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
      await appendEvent(q, S, { aggregateType: "webhook_secret", aggregateId: `${tenantId}:${env}`, eventType: "webhook_secret.rotated", tenantId, environment: env, payload: { tenant_id: tenantId, previous_expires_at: previousUntil.toISOString() } }, at);
      return r.rows[0];
    });
  }

  async secrets(tenantId: string): Promise<SecretRow[]> {
    const r = await this.db.query<SecretRow>(`SELECT environment, secret, created_at, previous_secret, previous_expires_at FROM ${S}.secrets WHERE tenant_id = $1`, [tenantId]);
    return r.rows;
  }

  async setEndpoint(tenantId: string, env: EnvName, url: string, at: Date): Promise<void> {
    await this.db.query(
      `INSERT INTO ${S}.endpoints (tenant_id, environment, url, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
       ON CONFLICT (tenant_id, environment) DO UPDATE SET url = EXCLUDED.url, updated_at = EXCLUDED.updated_at`,
      [tenantId, env, url, at],
    );
  }

  /** Answers the removed URL, or undefined when none was set. */
  async removeEndpoint(tenantId: string, env: EnvName): Promise<string | undefined> {
    const r = await this.db.query<{ url: string }>(`DELETE FROM ${S}.endpoints WHERE tenant_id = $1 AND environment = $2 RETURNING url`, [tenantId, env]);
    return r.rows[0]?.url;
  }

  async endpoints(tenantId: string): Promise<EndpointRow[]> {
    const r = await this.db.query<EndpointRow>(`SELECT environment, url, updated_at FROM ${S}.endpoints WHERE tenant_id = $1`, [tenantId]);
    return r.rows;
  }

  /** The endpoint URL of a tenant's environment, read inside the event consumer's transaction. */
  static async endpointUrl(q: Queryable, tenantId: string, env: EnvName): Promise<string | undefined> {
    const r = await q.query<{ url: string }>(`SELECT url FROM ${S}.endpoints WHERE tenant_id = $1 AND environment = $2`, [tenantId, env]);
    return r.rows[0]?.url;
  }

  /** Inserts the deliveries of one event, due now; one (event, url) pair is inserted once. */
  static async insertDeliveries(q: Queryable, planned: PlannedDelivery[], maxAttempts: number, headers: (id: string) => Record<string, string>, at: Date): Promise<void> {
    for (const d of planned) {
      const id = newId("webhookDelivery", at.getTime());
      await q.query(
        `INSERT INTO ${S}.deliveries (id, tenant_id, environment, event_id, event_type, url, verification_request_id, verification_id, payload,
           request_headers, max_attempts, next_retry_at, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12, $12)
         ON CONFLICT (event_id, url) DO NOTHING`,
        [id, d.tenantId, d.environment, d.eventId, d.eventType, d.url, d.verificationRequestId, d.verificationId, d.payload, JSON.stringify(headers(id)), maxAttempts, at],
      );
    }
  }

  /**
   * Leases up to `limit` due pending rows (SKIP LOCKED: concurrent claimers get different rows)
   * until leaseUntil, with the tenants' secrets. A row whose lease expired (its sender died) is
   * due again.
   */
  async claimDue(now: Date, leaseUntil: Date, leaseToken: string, limit: number): Promise<DeliveryJob[]> {
    const r = await this.db.query<DeliveryJob>(
      `WITH due AS (
         SELECT id FROM ${S}.deliveries
          WHERE status = 'pending' AND next_retry_at <= $1 AND (lease_until IS NULL OR lease_until <= $1)
          ORDER BY next_retry_at LIMIT $4 FOR UPDATE SKIP LOCKED),
       claimed AS (
         UPDATE ${S}.deliveries d SET lease_until = $2, lease_token = $3 FROM due WHERE d.id = due.id
         RETURNING d.id, d.tenant_id, d.environment, d.url, d.payload, d.attempts, d.max_attempts, d.lease_token)
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

  /** Writes attempt outcomes in one statement; a row whose lease was taken over is left alone. */
  async recordResults(results: AttemptResult[]): Promise<void> {
    if (!results.length) return;
    const col = <T>(f: (r: AttemptResult) => T) => results.map(f);
    await this.db.query(
      `UPDATE ${S}.deliveries d SET
         status = r.status, attempts = d.attempts + 1, response_status = r.response_status, response_body = r.response_body,
         error_message = r.error_message, attempt_log = d.attempt_log || jsonb_build_array(r.entry::jsonb),
         next_retry_at = r.next_retry_at, last_attempt_at = r.at, request_headers = r.headers::jsonb,
         lease_until = NULL, lease_token = NULL, updated_at = r.at
       FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::text[], $8::timestamptz[], $9::timestamptz[], $10::text[])
         AS r(id, token, status, response_status, response_body, error_message, entry, next_retry_at, at, headers)
       WHERE d.id = r.id AND d.lease_token = r.token`,
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
      ],
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
    const w = where.join(" AND ");
    const [rows, count] = await Promise.all([
      this.db.query<DeliveryRow>(`SELECT ${LIST_COLUMNS} FROM ${S}.deliveries WHERE ${w} ORDER BY created_at DESC, id DESC LIMIT ${f.limit} OFFSET ${f.offset}`, params),
      this.db.query<{ total: number }>(`SELECT count(*)::int AS total FROM ${S}.deliveries WHERE ${w}`, params),
    ]);
    return { rows: rows.rows, total: count.rows[0].total };
  }

  async get(scope: Scope, id: string): Promise<DeliveryRow | undefined> {
    const r = await this.db.query<DeliveryRow>(`SELECT * FROM ${S}.deliveries WHERE id = $1 AND tenant_id = $2 AND environment = $3`, [id, scope.tenantId, scope.env]);
    return r.rows[0];
  }

  async stats(scope: Scope): Promise<Record<"total" | DeliveryStatus, number>> {
    const r = await this.db.query<Record<"total" | DeliveryStatus, number>>(
      `SELECT count(*)::int AS total,
              count(*) FILTER (WHERE status = 'delivered')::int AS delivered,
              count(*) FILTER (WHERE status = 'failed')::int AS failed,
              count(*) FILTER (WHERE status = 'pending')::int AS pending
         FROM ${S}.deliveries WHERE tenant_id = $1 AND environment = $2`,
      [scope.tenantId, scope.env],
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
