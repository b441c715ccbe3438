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

  it("calls of one key at the same time are decided as the same calls one after the other", async () => {
    const clock = new TestClock();
    const l = make(clock);
    const k = key();
    clock.t = START + 1_000;
    const ds = await Promise.all(Array.from({ length: 130 }, () => l.consume(k, 100)));
    expect(ds.filter((d) => d.allowed)).toHaveLength(100);
    // every allowed call has its own remaining count, and the refused ones come after them
    expect(
      ds
        .filter((d) => d.allowed)
        .map((d) => d.remaining)
        .sort((a, b) => b - a),
    ).toEqual(Array.from({ length: 100 }, (_, i) => 99 - i));
    expect(ds.slice(100).every((d) => !d.allowed && d.remaining === 0 && d.retryAfter > 0)).toBe(true);
    expect((await l.consume(k, 100)).allowed).toBe(false);
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
  limiterBehaviour(
    (clock) => new MemoryRateLimiter(clock.now),
    () => `key:mem-${++n}`,
  );
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

  it("sends the calls of a key made in one turn of the event loop together: one round trip for a burst", async () => {
    const clock = new TestClock();
    let scripts = 0;
    const counting = new Proxy(redis, {
      get(target, p, receiver) {
        const v = Reflect.get(target, p, receiver);
        if (p !== "eval" && p !== "evalSha") return typeof v === "function" ? v.bind(target) : v;
        return (...args: unknown[]) => (scripts++, (v as (...a: unknown[]) => unknown).apply(target, args));
      },
    });
    const l = new RedisRateLimiter(counting, clock.now);
    const [k, other] = [`key:test-${run}-burst`, `key:test-${run}-burst-other`];
    used.push(k, other);
    const [burst, alone] = await Promise.all([Promise.all(Array.from({ length: 50 }, () => l.consume(k, 100))), l.consume(other, 100)]);
    expect(burst.map((d) => d.remaining)).toEqual(Array.from({ length: 50 }, (_, i) => 99 - i));
    expect(alone).toMatchObject({ allowed: true, remaining: 99 });
    // one script run per key
    expect(scripts).toBe(2);
    // a call of a later turn goes on its own
    expect(await l.consume(k, 100)).toMatchObject({ allowed: true, remaining: 49 });
    expect(scripts).toBe(3);
  });

  it("a failed script run fails every call of its batch (their callers count in process), the next batch runs again", async () => {
    const clock = new TestClock();
    let fail = true;
    const flaky = new Proxy(redis, {
      get(target, p, receiver) {
        const v = Reflect.get(target, p, receiver);
        if (p !== "eval" && p !== "evalSha") return typeof v === "function" ? v.bind(target) : v;
        return (...args: unknown[]) =>
          fail ? new Promise((_, reject) => setTimeout(() => reject(new Error("timeout")), 50)) : (v as (...a: unknown[]) => unknown).apply(target, args);
      },
    });
    const l = new RedisRateLimiter(flaky, clock.now);
    const k = `key:test-${run}-flaky`;
    used.push(k);
    const began = Date.now();
    const calls = await Promise.allSettled(Array.from({ length: 5 }, () => l.consume(k, 100)));
    expect(calls.every((c) => c.status === "rejected")).toBe(true);
    expect(Date.now() - began).toBeLessThan(1_000);
    fail = false;
    expect(await l.consume(k, 100)).toMatchObject({ allowed: true, remaining: 99 });
  });

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
