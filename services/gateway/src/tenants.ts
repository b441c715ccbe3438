import { AppError, newId, type Clock, type EnvName } from "@icv/platform";
import { generateApiKey, hashApiKey, parseApiKey } from "./api-keys.ts";
import type { GatewayStore } from "./store.ts";

/** Tenants and their keys (admin CLI and first start). Keys are returned once and stored only as hashes. */
export class Tenants {
  constructor(
    private readonly store: GatewayStore,
    private readonly clock: Clock,
  ) {}

  async create(
    name: string,
  ): Promise<{ tenant: { id: string; name: string; createdAt: Date }; liveKey: string; testKey: string; liveKeyId: string; testKeyId: string }> {
    const trimmed = name.trim();
    if (!trimmed || trimmed.length > 200) throw new AppError("validation_error", "tenant name must be 1 to 200 characters");
    const at = this.clock.now();
    const id = newId("tenant", at.getTime());
    const live = generateApiKey("live");
    const test = generateApiKey("test");
    const [liveKeyId, testKeyId] = [newId("apiKey", at.getTime()), newId("apiKey", at.getTime())];
    await this.store.createTenant({ id, name: trimmed, at }, [
      { id: liveKeyId, env: "live", hash: live.hash, prefix: live.prefix },
      { id: testKeyId, env: "test", hash: test.hash, prefix: test.prefix },
    ]);
    return { tenant: { id, name: trimmed, createdAt: at }, liveKey: live.key, testKey: test.key, liveKeyId, testKeyId };
  }

  list() {
    return this.store.listTenants();
  }

  async createKey(tenantId: string, env: EnvName): Promise<{ keyId: string; key: string }> {
    if (!(await this.store.tenantExists(tenantId))) throw new AppError("not_found", "tenant not found");
    const k = generateApiKey(env);
    const at = this.clock.now();
    const keyId = newId("apiKey", at.getTime());
    await this.store.createKey({ id: keyId, tenantId, env, hash: k.hash, prefix: k.prefix, at });
    return { keyId, key: k.key };
  }

  /** Revokes a key named by its id, or by the key itself (found by its hash); answers its id and when it was revoked. */
  async revokeKey(by: { keyId?: string; key?: string }): Promise<{ keyId: string; revokedAt: Date }> {
    const keyId = by.keyId || (by.key && parseApiKey(by.key) ? (await this.store.keyByHash(hashApiKey(by.key)))?.id : undefined);
    const k = keyId ? await this.store.revokeKey(keyId, this.clock.now()) : undefined;
    if (!k?.revoked_at) throw new AppError("not_found", "API key not found");
    return { keyId: k.id, revokedAt: k.revoked_at };
  }

  async listKeys(tenantId: string) {
    if (!(await this.store.tenantExists(tenantId))) throw new AppError("not_found", "tenant not found");
    return this.store.keysOfTenant(tenantId);
  }
}
