// The pooled random bytes behind ids, AES-GCM nonces, salts and codes: never the same bytes twice
// (a repeated nonce would break AES-GCM), across the pool's refills; a copy each time, so a caller
// keeps its bytes while the pool is refilled; any size; uniform bytes.
import { describe, expect, it } from "vitest";
import { pooledRandomByte, pooledRandomBytes } from "../src/random.ts";

describe("pooled random bytes", () => {
  it("never hand out the same nonce twice, across many refills of the pool", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 20_000; i++) seen.add(pooledRandomBytes(12).toString("hex")); // 240 KB: about 60 refills
    expect(seen.size).toBe(20_000);
  });

  it("answer a copy: the pool's refills never change bytes already handed out", () => {
    const kept = pooledRandomBytes(16);
    const before = kept.toString("hex");
    for (let i = 0; i < 600; i++) pooledRandomBytes(16); // past two refills
    expect(kept.toString("hex")).toBe(before);
  });

  it("answer sizes larger than the pool", () => {
    const big = pooledRandomBytes(10_000);
    expect(big.length).toBe(10_000);
    expect(new Set(big).size).toBe(256);
  });

  it("draw every byte value about equally often", () => {
    const counts = new Array<number>(256).fill(0);
    for (let i = 0; i < 256_000; i++) counts[pooledRandomByte()]++;
    // 1,000 expected per value; a fair source stays well within ±25 %
    expect(Math.min(...counts)).toBeGreaterThan(750);
    expect(Math.max(...counts)).toBeLessThan(1_250);
  });
});
