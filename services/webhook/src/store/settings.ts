/** A tenant environment's webhook settings: its signing secrets and its endpoint (the webhook schema's secrets and endpoints tables). */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { WebhookSecretCreatedSchema, WebhookSecretRotatedSchema } from "@icv/contracts/gen/icv/events/v1/tenant_events_pb.ts";
import { appendEvent, outboxEvent, type Database, type EnvName, type Queryable } from "@icv/platform";
import type { EndpointRow, SecretRow } from "./rows.ts";

const S = "webhook";

const ENDPOINT_COLUMNS = "environment, url, updated_at, failing_since, disabled_at, disabled_reason";

const secretHead = (tenantId: string, env: EnvName) => ({
  aggregateType: "webhook_secret",
  aggregateId: `${tenantId}:${env}`,
  tenantId,
  environment: env,
});

export class SettingsStore {
  constructor(private readonly db: Database) {}

  /** Inserts the secrets that do not exist yet (with their events) and answers the stored ones. */
  async ensureSecrets(tenantId: string, fresh: Record<EnvName, string>, at: Date): Promise<Record<EnvName, string>> {
    return this.db.tx(async (q) => {
      for (const env of ["live", "test"] as const) await SettingsStore.ensureSecret(q, tenantId, env, fresh[env], at);
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
}
