// The shared limiter as services create it: in process without REDIS_URL, through Redis when it
// answers, and in process while it does not (DECISIONS.md: Redis down degrades, never stops).
import { createClient } from "redis";
import { describe, expect, it } from "vitest";
import { createLogger, createRateLimiter, MemoryRateLimiter } from "@icv/platform";
import { haveRedisBinary, privateRedis } from "../../../test/support/private-servers.ts";

const logger = createLogger({ level: "silent" });
const HOUR = 3_600_000;

describe("createRateLimiter", () => {
  it("counts in process without REDIS_URL, with the window each call names", async () => {
    let t = Math.ceil(Date.now() / HOUR) * HOUR + 1_000;
    const { limiter, close } = createRateLimiter({}, logger, () => t);
    expect((await limiter.consume("k", 2, HOUR)).allowed).toBe(true);
    expect((await limiter.consume("k", 2, HOUR)).allowed).toBe(true);
    const refused = await limiter.consume("k", 2, HOUR);
    expect(refused.allowed).toBe(false);
    // an hour's window: the wait is most of an hour, not a minute
    expect(refused.retryAfter).toBeGreaterThan(3_000);
    await limiter.refund("k", HOUR);
    expect((await limiter.consume("k", 2, HOUR)).allowed).toBe(true);
    t += 2 * HOUR;
    expect((await limiter.consume("k", 2, HOUR)).allowed).toBe(true);
    await close();
  });

  it("keeps counting in process while the Redis of REDIS_URL cannot be reached", async () => {
    const { limiter, close } = createRateLimiter({ REDIS_URL: "redis://127.0.0.1:1" }, logger);
    const ds = [];
    for (let i = 0; i < 4; i++) ds.push(await limiter.consume("down", 3, 60_000));
    expect(ds.map((d) => d.allowed)).toEqual([true, true, true, false]);
    await close();
  });

  it("a refund gives back one unit of the current window only", async () => {
    const l = new MemoryRateLimiter(() => 5_000);
    await l.refund("never-used");
    expect((await l.consume("never-used", 1)).allowed).toBe(true);
    expect((await l.consume("never-used", 1)).allowed).toBe(false);
  });
});

describe.skipIf(!haveRedisBinary)("createRateLimiter with a Redis that stops answering (skipped: no redis-server)", () => {
  it("answers from the in-process count within REDIS_TIMEOUT_MS while Redis hangs (at once once it is known silent), and through Redis once it answers again", async () => {
    const redis = await privateRedis();
    const reader = await createClient({ url: redis.url }).connect();
    const { limiter, close } = createRateLimiter({ REDIS_URL: redis.url, REDIS_TIMEOUT_MS: 300 }, logger);
    const counted = async () => {
      const keys = await reader.keys("icv:rl:{hang}:*");
      return keys.length ? Number(await reader.get(keys[0])) : 0;
    };
    try {
      // through Redis once it is connected
      for (let i = 0; i < 50 && (await counted()) === 0; i++) {
        await limiter.consume("hang", 1_000);
        await new Promise((r) => setTimeout(r, 20));
      }
      const before = await counted();
      expect(before).toBeGreaterThan(0);

      redis.pause();
      for (let round = 0; round < 3; round++) {
        const t0 = performance.now();
        const ds = await Promise.all(Array.from({ length: 20 }, () => limiter.consume("hang", 1_000)));
        const waited = performance.now() - t0;
        expect(ds.every((d) => d.allowed)).toBe(true);
        // the first calls wait out the timeout; later ones know Redis is silent and do not wait
        if (round === 0) expect(waited).toBeGreaterThanOrEqual(290);
        expect(waited).toBeLessThan(round === 0 ? 300 + 250 : 100);
      }

      redis.resume();
      // shared again: a call is counted in Redis (the batch sent before the pause is counted there too, late)
      let through = false;
      for (let i = 0; i < 100 && !through; i++) {
        const c = await counted();
        await limiter.consume("hang", 1_000);
        through = (await counted()) === c + 1;
        if (!through) await new Promise((r) => setTimeout(r, 20));
      }
      expect(through).toBe(true);
    } finally {
      await close();
      await reader.close().catch(() => undefined);
      await redis.close();
    }
  });
});
