import { randomBytes } from "node:crypto";
import { createClient, type RedisClientType } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryRateLimiter, RedisRateLimiter, type RateLimiter } from "../src/rate-limit.ts";

const WINDOW = 60_000;
// a window boundary, so "n ms into the window" is exact
const START = Math.ceil(Date.now() / WINDOW) * WINDOW + 100 * WINDOW;

class TestClock {
  t = START;
  now = () => this.t;
}

async function consumeN(l: RateLimiter, key: string, n: number, limit = 100) {
  const out = [];
  for (let i = 0; i < n; i++) out.push(await l.consume(key, limit));
  return out;
}

/** The same behaviour for every limiter; make() gives one on the given clock, key() a key no one else uses. */
function limiterBehaviour(make: (clock: TestClock) => RateLimiter, key: () => string) {
  it("allows 100 in a minute and refuses the 101st with retryAfter > 0", async () => {
    const clock = new TestClock();
    const l = make(clock);
    const k = key();
    clock.t = START + 1_000;
    const ds = await consumeN(l, k, 100);
    expect(ds.every((d) => d.allowed)).toBe(true);
    expect(ds.map((d) => d.remaining)).toEqual(Array.from({ length: 100 }, (_, i) => 99 - i));
    expect(ds[0]).toMatchObject({ limit: 100, resetAt: (START + WINDOW) / 1000 });
    const refused = await l.consume(k, 100);
    expect(refused).toMatchObject({ allowed: false, limit: 100, remaining: 0 });
    expect(refused.retryAfter).toBeGreaterThan(0);
    expect(refused.retryAfter).toBeLessThanOrEqual(61);
    // refusals are not counted
    clock.t = START + 2_000;
    expect((await l.consume(k, 100)).allowed).toBe(false);
  });

  it("counts each key on its own", async () => {
    const clock = new TestClock();
    const l = make(clock);
    const [a, b] = [key(), key()];
    await consumeN(l, a, 100);
    expect((await l.consume(a, 100)).allowed).toBe(false);
    expect((await l.consume(b, 100)).allowed).toBe(true);
  });

  it("slides: half a window later about half of the previous window's count is still counted", async () => {
    const clock = new TestClock();
    const l = make(clock);
    const k = key();
    await consumeN(l, k, 100);
    clock.t = START + WINDOW + WINDOW / 2;
    const first = await l.consume(k, 100);
    expect(first.allowed).toBe(true);
    // 100 × 0.5 still weighs, plus this one
    expect(first.remaining).toBe(49);
    const rest = await consumeN(l, k, 60);
    expect(rest.filter((d) => d.allowed)).toHaveLength(49);
    expect(rest[49].allowed).toBe(false);
    expect(rest[49].retryAfter).toBeGreaterThan(0);
  });

  it("forgets everything after two quiet windows", async () => {
    const clock = new TestClock();
    const l = make(clock);
    const k = key();
    await consumeN(l, k, 100);
    clock.t = START + 2 * WINDOW + 1;
    const d = await l.consume(k, 100);
    expect(d).toMatchObject({ allowed: true, remaining: 99 });
  });

  it("a client that waits retryAfter seconds after a refusal mid-window is let through", async () => {
    const clock = new TestClock();
    const l = make(clock);
    const k = key();
    await consumeN(l, k, 100);
    clock.t = START + WINDOW + WINDOW / 2;
    await consumeN(l, k, 50);
    const refused = await l.consume(k, 100);
    expect(refused.allowed).toBe(false);
    clock.t += refused.retryAfter * 1000;
    expect((await l.consume(k, 100)).allowed).toBe(true);
  });

  it("a client that waits retryAfter seconds after a burst that filled the current window is let through", async () => {
    const clock = new TestClock();
    const l = make(clock);
    const k = key();
    clock.t = START + 1_000;
    await consumeN(l, k, 100);
    const refused = await l.consume(k, 100);
    expect(refused.allowed).toBe(false);
    clock.t += refused.retryAfter * 1000;
    expect((await l.consume(k, 100)).allowed).toBe(true);
  });
}

describe("MemoryRateLimiter (injected clock)", () => {
  let n = 0;
  limiterBehaviour((clock) => new MemoryRateLimiter(clock.now), () => `key:mem-${++n}`);
});

describe.runIf(process.env.REDIS_URL)("RedisRateLimiter against real Redis (REDIS_URL)", () => {
  let redis: RedisClientType;
  const run = randomBytes(6).toString("hex");
  const used: string[] = [];
  let n = 0;
  beforeAll(async () => {
    redis = createClient({ url: process.env.REDIS_URL });
    await redis.connect();
  });
  afterAll(async () => {
    if (!redis) return;
    for (const k of used) {
      const keys = await redis.keys(`icv:rl:{${k}}:*`);
      if (keys.length) await redis.del(keys);
    }
    await redis.quit();
  });
  limiterBehaviour(
    (clock) => new RedisRateLimiter(redis, clock.now),
    () => {
      const k = `key:test-${run}-${++n}`;
      used.push(k);
      return k;
    },
  );

  it("shares one count between gateway replicas (two limiters, one Redis)", async () => {
    const clock = new TestClock();
    const [a, b] = [new RedisRateLimiter(redis, clock.now), new RedisRateLimiter(redis, clock.now)];
    const k = `key:test-${run}-shared`;
    used.push(k);
    await consumeN(a, k, 60);
    const fromB = await consumeN(b, k, 41);
    expect(fromB.filter((d) => d.allowed)).toHaveLength(40);
    expect((await a.consume(k, 100)).allowed).toBe(false);
  });
});

describe.skipIf(process.env.REDIS_URL)("RedisRateLimiter", () => {
  it.skip("runs the same assertions against Redis (skipped because REDIS_URL is not set)", () => undefined);
});
