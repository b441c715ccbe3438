import type { Logger } from "@icv/platform";
import { newSigningKey, openSigningKey, type PublicJwk, type SigningKey } from "./keys.ts";
import type { ProofStore } from "./store.ts";

const ACTIVE_TTL_MS = 30_000;
const JWKS_TTL_MS = 10_000;

/**
 * The signing keys, cached: the active key (re-read every 30 s so a rotation on another replica
 * is picked up), keys by kid (loaded once on first sight) and the published JWKS (10 s).
 */
export class KeyRing {
  private active?: { key: SigningKey; at: number };
  private readonly byKidCache = new Map<string, SigningKey | null>();
  private jwksCache?: { keys: PublicJwk[]; at: number };

  constructor(
    private readonly store: ProofStore,
    private readonly kek: Buffer,
    private readonly bits: number,
    private readonly logger: Logger,
  ) {}

  /** Makes sure an active key exists (first start generates one). */
  async ensure(): Promise<SigningKey> {
    const row = await this.store.activeKey();
    if (row) return this.remember(openSigningKey(row.kid, row.public_jwk, row.private_key_enc, this.kek));
    const { key, record } = await newSigningKey(this.bits, this.kek);
    if (await this.store.insertFirstKey(record)) {
      this.logger.info({ kid: key.kid }, "generated the first signing key");
      return this.remember(key);
    }
    return this.ensure(); // another replica created it first
  }

  async signingKey(now = Date.now()): Promise<SigningKey> {
    if (this.active && now - this.active.at < ACTIVE_TTL_MS) return this.active.key;
    return this.ensure();
  }

  /** The public key for kid, or undefined when we never had it. */
  async verificationKey(kid: string): Promise<SigningKey | undefined> {
    const cached = this.byKidCache.get(kid);
    if (cached !== undefined) return cached ?? undefined;
    const row = await this.store.key(kid);
    const key = row ? openSigningKey(row.kid, row.public_jwk, row.private_key_enc, this.kek) : null;
    if (key || this.byKidCache.size < 10_000) this.byKidCache.set(kid, key);
    return key ?? undefined;
  }

  async jwks(now = new Date()): Promise<PublicJwk[]> {
    if (this.jwksCache && now.getTime() - this.jwksCache.at < JWKS_TTL_MS) return this.jwksCache.keys;
    const keys = await this.store.publishedKeys(now);
    this.jwksCache = { keys, at: now.getTime() };
    return keys;
  }

  async rotate(now: Date): Promise<{ kid: string; retiredKid?: string }> {
    const { key, record } = await newSigningKey(this.bits, this.kek);
    const retiredKid = await this.store.rotate(record, now);
    this.remember(key);
    this.jwksCache = undefined;
    this.logger.info({ kid: key.kid, retired_kid: retiredKid }, "signing key rotated");
    return { kid: key.kid, retiredKid };
  }

  private remember(key: SigningKey): SigningKey {
    this.active = { key, at: Date.now() };
    this.byKidCache.set(key.kid, key);
    return key;
  }
}
