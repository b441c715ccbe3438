import { appendEvent, type Database, type EnvName } from "@icv/platform";

const S = "webhook";

export class WebhookStore {
  constructor(private readonly db: Database) {}

  /** Inserts the secrets that do not exist yet (with their events) and answers the stored ones. */
  async ensureSecrets(tenantId: string, fresh: Record<EnvName, string>, at: Date): Promise<Record<EnvName, string>> {
    return this.db.tx(async (q) => {
      for (const env of ["live", "test"] as const) {
        const r = await q.query(
          `INSERT INTO ${S}.secrets (tenant_id, environment, secret, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
          [tenantId, env, fresh[env], at],
        );
        if (r.rowCount === 1) {
          await appendEvent(q, S, { aggregateType: "webhook_secret", aggregateId: `${tenantId}:${env}`, eventType: "webhook_secret.created", tenantId, environment: env, payload: { tenant_id: tenantId } }, at);
        }
      }
      const rows = await q.query<{ environment: EnvName; secret: string }>(`SELECT environment, secret FROM ${S}.secrets WHERE tenant_id = $1`, [tenantId]);
      return Object.fromEntries(rows.rows.map((r) => [r.environment, r.secret])) as Record<EnvName, string>;
    });
  }
}
