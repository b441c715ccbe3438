import { hash, randomBytes } from "node:crypto";
import type { EnvName } from "@icv/platform";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const KEY_RE = /^pk_(live|test)_[0-9A-Za-z]{43}$/;

/** 32 random bytes in base62 (43 characters, zero-padded so every key has one length). */
function base62(bytes: Buffer): string {
  let n = BigInt(`0x${bytes.toString("hex")}`);
  let out = "";
  while (n > 0n) {
    out = BASE62[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out.padStart(43, "0");
}

export interface NewKey {
  key: string;
  hash: string;
  prefix: string;
}

/** A new API key (`pk_live_…`/`pk_test_…`); only its SHA-256 is stored. */
export function generateApiKey(env: EnvName): NewKey {
  const key = `pk_${env}_${base62(randomBytes(32))}`;
  return { key, hash: hashApiKey(key), prefix: key.slice(0, 12) };
}

export const hashApiKey = (key: string): string => hash("sha256", key, "hex");

/** Cheap shape check before any lookup; also tells the environment a key claims. */
export function parseApiKey(key: string): EnvName | undefined {
  const m = KEY_RE.exec(key);
  return m ? (m[1] as EnvName) : undefined;
}

/** A small TTL cache of key lookups (hash → tenant), negative answers included. */
export class KeyCache<V> {
  private readonly map = new Map<string, { v: V; until: number }>();
  constructor(
    private readonly ttlMs: number,
    private readonly max = 10_000,
  ) {}

  get(k: string, now = Date.now()): V | undefined {
    const e = this.map.get(k);
    if (!e) return undefined;
    if (e.until <= now) {
      this.map.delete(k);
      return undefined;
    }
    return e.v;
  }

  set(k: string, v: V, now = Date.now()): void {
    if (this.ttlMs <= 0) return;
    if (this.map.size >= this.max) this.map.delete(this.map.keys().next().value as string);
    this.map.set(k, { v, until: now + this.ttlMs });
  }

  clear(): void {
    this.map.clear();
  }
}
