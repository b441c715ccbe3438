import { randomBytes, randomFillSync } from "node:crypto";

/**
 * Random bytes for what every request makes (id characters, AES-GCM nonces, salts, codes), drawn
 * from one pool that the operating system's generator refills 4 KiB at a time. Each byte is handed
 * out once; the pool's bytes are as random as a direct call's. Why: a call to the generator costs
 * about as much as a whole seal on this kind of machine, and a proof made four to six of them
 * (issue 33). Long-lived secrets (keys, tokens) keep calling randomBytes directly.
 */
const pool = Buffer.alloc(4096);
let used = pool.length;

const refill = () => {
  randomFillSync(pool);
  used = 0;
};

/** `n` fresh random bytes (a copy: the caller may keep them). */
export function pooledRandomBytes(n: number): Buffer {
  if (n > pool.length) return randomBytes(n);
  if (used + n > pool.length) refill();
  const out = Buffer.from(pool.subarray(used, used + n));
  used += n;
  return out;
}

/** One fresh random byte. */
export function pooledRandomByte(): number {
  if (used === pool.length) refill();
  return pool[used++];
}
