/** The spec's signed revocation list, per environment, cached a few seconds and dropped on every revocation here. */
import type { Clock } from "@icv/platform";
import type { KeyEnv } from "./keys.ts";
import type { KeyRing } from "./keyring.ts";
import type { ProofStore } from "./store/proofs.ts";
import { signDocument } from "./tokens.ts";

const REVOCATION_CACHE_MS = 5_000;

export interface RevocationList {
  revoked: { id: string; revoked_at: Date; revoked_reason: string }[];
  generatedAt: Date;
  /** Compact JWS (RS256) over {revoked, generated_at}, by a key of the list's own set. */
  signature: string;
}

export class RevocationLists {
  private cache = new Map<string, { at: number; value: RevocationList }>();

  constructor(
    private readonly store: ProofStore,
    private readonly keys: KeyRing,
    private readonly clock: Clock,
  ) {}

  async get(env: KeyEnv, since: Date | undefined): Promise<RevocationList> {
    const cacheKey = `${env}:${since?.toISOString() ?? ""}`;
    const hit = this.cache.get(cacheKey);
    if (hit && Date.now() - hit.at < REVOCATION_CACHE_MS) return hit.value;
    const value = await this.build(env, since);
    if (this.cache.size > 100) this.cache = new Map();
    this.cache.set(cacheKey, { at: Date.now(), value });
    return value;
  }

  /** A revocation or a key rotation here: the next read builds the list again. */
  drop(): void {
    this.cache = new Map();
  }

  /** One environment's list, signed by that environment's key (a test list is never signed by a live key). */
  private async build(env: KeyEnv, since: Date | undefined): Promise<RevocationList> {
    const now = this.clock.now();
    const revoked = await this.store.revokedSince(env, since, now);
    const body = revoked.map((r) => ({ proof_id: r.id, revoked_at: r.revoked_at.toISOString(), reason: r.revoked_reason }));
    const signature = await signDocument(await this.keys.signingKey(env), { revoked: body, generated_at: now.toISOString() });
    return { revoked, generatedAt: now, signature };
  }
}
