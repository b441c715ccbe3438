import { create } from "@bufbuild/protobuf";
import { ApiKeyCreatedSchema, ApiKeyRevokedSchema, TenantCreatedSchema } from "@icv/contracts/gen/icv/events/v1/tenant_events_pb.ts";
import { appendEvent, outboxEvent, PersonalData, type Database, type EnvName, type Scope } from "@icv/platform";

const S = "gateway";

/** The additional data of a stored Idempotency-Key answer: its scope and key (a sealed answer opens only there). */
const idempotencyAad = (scope: Scope, key: string) => `idempotency:${scope.tenantId}:${scope.env}:${key}`;

export interface KeyRecord {
  id: string;
  tenant_id: string;
  environment: EnvName;
  revoked_at: Date | null;
  last_used_at: Date | null;
}

/** A key as the admin CLI lists it (never its hash). */
export interface ListedKey {
  id: string;
  environment: EnvName;
  key_prefix: string;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

/** last_used_at is written at most this often per key. */
const TOUCH_EVERY = "1 minute";

export interface IdempotencyRecord {
  method: string;
  path: string;
  body_hash: string;
  status_code: number | null;
  response_body: unknown;
}

export class GatewayStore {
  /**
   * `personalData` seals the stored answers of Idempotency-Key requests (they hold identifiers and
   * client_metadata; docs/privacy.md). Hand-built test stores get this process's ephemeral keys.
   */
  constructor(
    private readonly db: Database,
    private readonly personalData: PersonalData = PersonalData.ephemeral(),
  ) {}

  async tenantCount(): Promise<number> {
    const r = await this.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${S}.tenants`);
    return r.rows[0].n;
  }

  async listTenants(): Promise<{ id: string; name: string; created_at: Date }[]> {
    return (await this.db.query<{ id: string; name: string; created_at: Date }>(`SELECT id, name, created_at FROM ${S}.tenants ORDER BY id`)).rows;
  }

  async tenantName(id: string): Promise<string | undefined> {
    return (await this.db.query<{ name: string }>(`SELECT name FROM ${S}.tenants WHERE id = $1`, [id])).rows[0]?.name;
  }

  async tenantExists(id: string): Promise<boolean> {
    return (await this.db.query(`SELECT 1 FROM ${S}.tenants WHERE id = $1`, [id])).rowCount === 1;
  }

  /** A tenant with its first live and test keys, in one transaction. */
  async createTenant(t: { id: string; name: string; at: Date }, keys: { id: string; env: EnvName; hash: string; prefix: string }[]): Promise<void> {
    await this.db.tx(async (q) => {
      await q.query(`INSERT INTO ${S}.tenants (id, name, created_at) VALUES ($1, $2, $3)`, [t.id, t.name, t.at]);
      for (const k of keys) {
        await q.query(`INSERT INTO ${S}.api_keys (id, tenant_id, environment, key_hash, key_prefix, created_at) VALUES ($1, $2, $3, $4, $5, $6)`, [
          k.id,
          t.id,
          k.env,
          k.hash,
          k.prefix,
          t.at,
        ]);
      }
      for (const env of ["live", "test"] as const) {
        const head = { aggregateType: "tenant", aggregateId: t.id, tenantId: t.id, environment: env };
        await appendEvent(q, S, outboxEvent("tenant.created", head, create(TenantCreatedSchema, { tenantId: t.id, name: t.name })), t.at);
      }
    });
  }

  async createKey(k: { id: string; tenantId: string; env: EnvName; hash: string; prefix: string; at: Date }): Promise<void> {
    await this.db.tx(async (q) => {
      await q.query(`INSERT INTO ${S}.api_keys (id, tenant_id, environment, key_hash, key_prefix, created_at) VALUES ($1, $2, $3, $4, $5, $6)`, [
        k.id,
        k.tenantId,
        k.env,
        k.hash,
        k.prefix,
        k.at,
      ]);
      const head = { aggregateType: "api_key", aggregateId: k.id, tenantId: k.tenantId, environment: k.env };
      await appendEvent(q, S, outboxEvent("api_key.created", head, create(ApiKeyCreatedSchema, { keyId: k.id, prefix: k.prefix })), k.at);
    });
  }

  /** Revokes a key once; answers the key as it stands (undefined when unknown). */
  async revokeKey(id: string, at: Date): Promise<KeyRecord | undefined> {
    return this.db.tx(async (q) => {
      const r = await q.query<KeyRecord>(
        `UPDATE ${S}.api_keys SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL RETURNING id, tenant_id, environment, revoked_at, last_used_at`,
        [id, at],
      );
      if (r.rows[0]) {
        const k = r.rows[0];
        const head = { aggregateType: "api_key", aggregateId: id, tenantId: k.tenant_id, environment: k.environment };
        await appendEvent(q, S, outboxEvent("api_key.revoked", head, create(ApiKeyRevokedSchema, { keyId: id })), at);
        return k;
      }
      return (await q.query<KeyRecord>(`SELECT id, tenant_id, environment, revoked_at, last_used_at FROM ${S}.api_keys WHERE id = $1`, [id])).rows[0];
    });
  }

  async keyByHash(hash: string): Promise<KeyRecord | undefined> {
    const r = await this.db.query<KeyRecord>(`SELECT id, tenant_id, environment, revoked_at, last_used_at FROM ${S}.api_keys WHERE key_hash = $1`, [hash]);
    return r.rows[0];
  }

  /** Records a use of the key, unless one was recorded within TOUCH_EVERY (no write then). */
  async touchKey(k: KeyRecord, at: Date): Promise<void> {
    if (k.last_used_at && at.getTime() - k.last_used_at.getTime() < 60_000) return;
    await this.db.query(
      `UPDATE ${S}.api_keys SET last_used_at = $2 WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2::timestamptz - interval '${TOUCH_EVERY}')`,
      [k.id, at],
    );
  }

  /** A tenant's keys of both environments, oldest first. */
  async keysOfTenant(tenantId: string): Promise<ListedKey[]> {
    const r = await this.db.query<ListedKey>(
      `SELECT id, environment, key_prefix, created_at, last_used_at, revoked_at FROM ${S}.api_keys WHERE tenant_id = $1 ORDER BY created_at, id`,
      [tenantId],
    );
    return r.rows;
  }

  /**
   * Claims an idempotency key; answers the existing record when the key was already used. A claim
   * left unfinished for over a minute (its process died mid-request) is taken over.
   */
  async claimIdempotencyKey(
    scope: Scope,
    key: string,
    rec: { method: string; path: string; bodyHash: string },
    now: Date = new Date(),
  ): Promise<IdempotencyRecord | undefined> {
    const ins = await this.db.query(
      `INSERT INTO ${S}.idempotency_keys AS k (tenant_id, environment, key, method, path, body_hash, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (tenant_id, environment, key) DO UPDATE SET method = EXCLUDED.method, path = EXCLUDED.path, body_hash = EXCLUDED.body_hash, created_at = EXCLUDED.created_at
        WHERE k.status_code IS NULL AND k.created_at < $7::timestamptz - interval '1 minute'
       RETURNING 1`,
      [scope.tenantId, scope.env, key, rec.method, rec.path, rec.bodyHash, now],
    );
    if (ins.rowCount === 1) return undefined;
    const r = await this.db.query<IdempotencyRecord>(
      `SELECT method, path, body_hash, status_code, response_body FROM ${S}.idempotency_keys WHERE tenant_id = $1 AND environment = $2 AND key = $3`,
      [scope.tenantId, scope.env, key],
    );
    const prev = r.rows[0];
    if (prev && typeof prev.response_body === "string") prev.response_body = JSON.parse(this.personalData.open(prev.response_body, idempotencyAad(scope, key)));
    return prev;
  }

  async completeIdempotencyKey(scope: Scope, key: string, status: number, body: unknown): Promise<void> {
    await this.db.query(`UPDATE ${S}.idempotency_keys SET status_code = $4, response_body = $5 WHERE tenant_id = $1 AND environment = $2 AND key = $3`, [
      scope.tenantId,
      scope.env,
      key,
      status,
      JSON.stringify(this.personalData.seal(JSON.stringify(body ?? null), idempotencyAad(scope, key))),
    ]);
  }

  /** Frees a key whose request failed before an answer worth replaying (5xx), so the client can retry. */
  async releaseIdempotencyKey(scope: Scope, key: string): Promise<void> {
    await this.db.query(`DELETE FROM ${S}.idempotency_keys WHERE tenant_id = $1 AND environment = $2 AND key = $3 AND status_code IS NULL`, [
      scope.tenantId,
      scope.env,
      key,
    ]);
  }

  async purgeIdempotencyKeys(before: Date): Promise<number> {
    return (await this.db.query(`DELETE FROM ${S}.idempotency_keys WHERE created_at < $1`, [before])).rowCount;
  }

  async ping(): Promise<boolean> {
    return this.db.ping();
  }
}
