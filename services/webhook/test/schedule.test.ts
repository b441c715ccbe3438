import { describe, expect, it } from "vitest";
import { DEFAULT_RETRY_DELAYS_MS, jittered, maxAttempts, parseRetryAfter, RETRY_AFTER_CAP_MS, retryDelay } from "../src/schedule.ts";

const NOW = new Date("2026-03-01T12:00:00.000Z");

describe("retry schedule", () => {
  it("is 0 s (first attempt), then 30 s, 2 min, 10 min, 1 h, 6 h: six attempts", () => {
    expect(DEFAULT_RETRY_DELAYS_MS).toEqual([30_000, 120_000, 600_000, 3_600_000, 21_600_000]);
    expect(maxAttempts(DEFAULT_RETRY_DELAYS_MS)).toBe(6);
    expect(maxAttempts([200, 200])).toBe(3);
  });

  it("waits delays[n-1] after failed attempt n, without jitter at random() = 0.5", () => {
    const mid = () => 0.5;
    expect([1, 2, 3, 4, 5].map((n) => retryDelay(n, DEFAULT_RETRY_DELAYS_MS, mid))).toEqual(DEFAULT_RETRY_DELAYS_MS);
    // attempts beyond the list (a manual retry's extra attempt) reuse the last delay
    expect(retryDelay(9, [100, 200], mid)).toBe(200);
  });

  it("jitters by at most ±20 %", () => {
    expect(jittered(30_000, () => 0)).toBe(24_000);
    expect(jittered(30_000, () => 0.999999)).toBe(36_000);
    for (let i = 0; i < 1000; i++) {
      const d = jittered(120_000, Math.random);
      expect(d).toBeGreaterThanOrEqual(96_000);
      expect(d).toBeLessThanOrEqual(144_000);
    }
  });
});

describe("Retry-After", () => {
  it("reads delta-seconds and HTTP dates", () => {
    expect(parseRetryAfter("120", NOW)).toBe(120_000);
    expect(parseRetryAfter(" 0 ", NOW)).toBe(0);
    expect(parseRetryAfter("Sun, 01 Mar 2026 12:05:00 GMT", NOW)).toBe(300_000);
    expect(parseRetryAfter("Sun, 01 Mar 2026 11:00:00 GMT", NOW)).toBe(0);
    expect(parseRetryAfter(["60", "5"], NOW)).toBe(60_000);
  });

  it("ignores what it cannot read", () => {
    expect(parseRetryAfter(undefined, NOW)).toBeUndefined();
    expect(parseRetryAfter("", NOW)).toBeUndefined();
    expect(parseRetryAfter("soon", NOW)).toBeUndefined();
    expect(parseRetryAfter("-5", NOW)).toBeUndefined();
  });

  it("waits at least as long as asked, up to the cap, never less than the schedule", () => {
    const mid = () => 0.5;
    expect(retryDelay(1, DEFAULT_RETRY_DELAYS_MS, mid, 300_000)).toBe(300_000);
    expect(retryDelay(1, DEFAULT_RETRY_DELAYS_MS, mid, 1_000)).toBe(30_000);
    expect(retryDelay(1, DEFAULT_RETRY_DELAYS_MS, mid, 7 * 24 * 3_600_000)).toBe(RETRY_AFTER_CAP_MS);
  });
});
