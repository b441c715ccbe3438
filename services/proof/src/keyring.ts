import type { Logger } from "@icv/platform";
import { newSigningKey, openSigningKey, type KeyEnv, type PublicJwk, type SigningKey } from "./keys.ts";
import type { KeyRow, KeyStore } from "./store/keys.ts";

const ACTIVE_TTL_MS = 30_000;
const JWKS_TTL_MS = 10_000;
export const KEY_ENVS: readonly KeyEnv[] = ["live", "test"];

/**
 * The signing keys of both sets (live and test), cached: each set's active key (re-read every
 * 30 s so a rotation on another replica is picked up), keys by kid (loaded once on first sight,
 * with the set they belong to) and each set's published JWKS (10 s). A key signs only for its
 * own set: signingKey(env) never answers a key of the other set.
 */
export class KeyRing {
  private readonly active = new Map<KeyEnv, { key: SigningKey; at: number }>();
  private readonly byKidCache = new Map<string, SigningKey | null>();
  private readonly jwksCache = new Map<KeyEnv, { keys: PublicJwk[]; at: number }>();

  constructor(
    private readonly store: KeyStore,
    private readonly kek: Buffer,
    private readonly bits: number,
    private readonly logger: Logger,
  ) {}

  /** Makes sure both sets have an active key (the first start of a set generates one). */
  async ensureAll(): Promise<void> {
    for (const env of KEY_ENVS) await this.ensure(env);
  }

  async ensure(env: KeyEnv): Promise<SigningKey> {
    const row = await this.store.activeKey(env);
    if (row) return this.remember(this.open(row));
    const { key, record } = await newSigningKey(this.bits, this.kek, env);
    if (await this.store.insertFirstKey(record)) {
      this.logger.info({ kid: key.kid, environment: env }, "generated the first signing key of the set");
      return this.remember(key);
    }
    return this.ensure(env); // another replica created it first
  }

  async signingKey(env: KeyEnv, now = Date.now()): Promise<SigningKey> {
    const a = this.active.get(env);
    const key = a && now - a.at < ACTIVE_TTL_MS ? a.key : await this.ensure(env);
    if (key.env !== env) throw new Error(`signing key ${key.kid} is not a ${env} key`); // never sign across sets
    return key;
  }

  /** The key for kid with the set it belongs to, or undefined when we never had it. */
  async verificationKey(kid: string): Promise<SigningKey | undefined> {
    const cached = this.byKidCache.get(kid);
    if (cached !== undefined) return cached ?? undefined;
    const row = await this.store.key(kid);
    const key = row ? this.open(row) : null;
    if (key || this.byKidCache.size < 10_000) this.byKidCache.set(kid, key);
    return key ?? undefined;
  }

  async jwks(env: KeyEnv, now = new Date()): Promise<PublicJwk[]> {
    const hit = this.jwksCache.get(env);
    if (hit && now.getTime() - hit.at < JWKS_TTL_MS) return hit.keys;
    const keys = await this.store.publishedKeys(env, now);
    this.jwksCache.set(env, { keys, at: now.getTime() });
    return keys;
  }

  async rotate(env: KeyEnv, now: Date): Promise<{ kid: string; retiredKid?: string }> {
    const { key, record } = await newSigningKey(this.bits, this.kek, env);
    const retiredKid = await this.store.rotate(record, now);
    this.remember(key);
    this.jwksCache.delete(env);
    this.logger.info({ kid: key.kid, retired_kid: retiredKid, environment: env }, "signing key rotated");
    return { kid: key.kid, retiredKid };
  }

  private open(row: KeyRow): SigningKey {
    return openSigningKey(row.kid, row.environment, row.public_jwk, row.private_key_enc, this.kek);
  }

  private remember(key: SigningKey): SigningKey {
    this.active.set(key.env, { key, at: Date.now() });
    this.byKidCache.set(key.kid, key);
    return key;
  }
}
