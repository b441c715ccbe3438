import { randomBytes } from "node:crypto";
import { createClient, type RedisClientType } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectRedis, createLogger } from "@icv/platform";
import { haveRedisBinary, privateRedis } from "../../../test/support/private-servers.ts";
import { FallbackConnectionLimiter, MemoryConnectionLimiter, RedisConnectionLimiter, type ConnectionLimiter } from "../src/sse/connection-limiter.ts";

const acquireN = async (l: ConnectionLimiter, tenant: string, ids: string[], limit: number) => {
  const out: boolean[] = [];
  for (const id of ids) out.push(await l.acquire(tenant, id, limit));
  return out;
};

/** The same behaviour for every limiter; tenant() gives a tenant id no one else uses. */
function limiterBehaviour(make: () => ConnectionLimiter, tenant: () => string) {
  it("grants up to the limit, refuses the next, and a release frees one slot at once", async () => {
    const l = make();
    const t = tenant();
    expect(await acquireN(l, t, ["c1", "c2", "c3"], 3)).toEqual([true, true, true]);
    expect(await l.acquire(t, "c4", 3)).toBe(false);
    // a refusal takes no slot
    expect(await l.acquire(t, "c5", 3)).toBe(false);
    await l.release(t, "c2");
    expect(await l.acquire(t, "c6", 3)).toBe(true);
    expect(await l.acquire(t, "c7", 3)).toBe(false);
  });

  it("counts each tenant on its own", async () => {
    const l = make();
    const [a, b] = [tenant(), tenant()];
    expect(await acquireN(l, a, ["c1", "c2"], 2)).toEqual([true, true]);
    expect(await l.acquire(a, "c3", 2)).toBe(false);
    expect(await l.acquire(b, "c1", 2)).toBe(true);
  });

  it("frees everything once every stream is closed", async () => {
    const l = make();
    const t = tenant();
    const ids = ["c1", "c2", "c3", "c4"];
    await acquireN(l, t, ids, 4);
    for (const id of ids) await l.release(t, id);
    expect(await acquireN(l, t, ["d1", "d2", "d3", "d4", "d5"], 4)).toEqual([true, true, true, true, false]);
  });
}

describe("MemoryConnectionLimiter", () => {
  let n = 0;
  limiterBehaviour(
    () => new MemoryConnectionLimiter(),
    () => `ten_mem${++n}`,
  );
});

describe.runIf(process.env.REDIS_URL)("RedisConnectionLimiter against real Redis (REDIS_URL)", () => {
  let redis: RedisClientType;
  const run = randomBytes(6).toString("hex");
  const used: string[] = [];
  let n = 0;
  const tenant = () => {
    const t = `ten_test${run}${++n}`;
    used.push(t);
    return t;
  };
  beforeAll(async () => {
    redis = createClient({ url: process.env.REDIS_URL });
    await redis.connect();
  });
  afterAll(async () => {
    if (!redis) return;
    if (used.length) await redis.del(used.map((t) => `icv:sse:{${t}}`));
    await redis.quit();
  });
  limiterBehaviour(() => new RedisConnectionLimiter(redis, 60_000), tenant);

  it("shares one count between gateway replicas (two limiters, one Redis)", async () => {
    const [a, b] = [new RedisConnectionLimiter(redis, 60_000), new RedisConnectionLimiter(redis, 60_000)];
    const t = tenant();
    expect(await acquireN(a, t, ["a1", "a2", "a3"], 5)).toEqual([true, true, true]);
    expect(await acquireN(b, t, ["b1", "b2", "b3"], 5)).toEqual([true, true, false]);
    expect(await a.acquire(t, "a4", 5)).toBe(false);
    await b.release(t, "a1");
    expect(await a.acquire(t, "a4", 5)).toBe(true);
  });

  it("a crashed replica's slots expire with their leases; refreshed ones are kept", async () => {
    const lease = 400;
    const alive = new RedisConnectionLimiter(redis, lease);
    const crashed = new RedisConnectionLimiter(redis, lease);
    const t = tenant();
    expect(await acquireN(alive, t, ["live1", "live2"], 4)).toEqual([true, true]);
    expect(await acquireN(crashed, t, ["dead1", "dead2"], 4)).toEqual([true, true]);
    expect(await alive.acquire(t, "x", 4)).toBe(false);
    // the live replica renews its leases on each heartbeat; the crashed one never does
    for (let i = 0; i < 4; i++) {
      await new Promise((r) => setTimeout(r, lease / 2));
      await alive.refresh(t, ["live1", "live2"]);
    }
    expect(await redis.zRange(`icv:sse:{${t}}`, 0, -1)).toEqual(expect.arrayContaining(["live1", "live2"]));
    expect(await acquireN(alive, t, ["new1", "new2", "new3"], 4)).toEqual([true, true, false]);
    expect((await redis.zRange(`icv:sse:{${t}}`, 0, -1)).sort()).toEqual(["live1", "live2", "new1", "new2"]);
    // the key itself does not outlive the last lease
    const ttl = await redis.pTTL(`icv:sse:{${t}}`);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(lease);
  });
});

describe.skipIf(process.env.REDIS_URL)("RedisConnectionLimiter", () => {
  it.skip("runs the same assertions against Redis, plus lease expiry across replicas (skipped because REDIS_URL is not set)", () => undefined);
});

describe("FallbackConnectionLimiter (Redis away)", () => {
  // a Redis that is down or fails mid-call: any call on it throws
  const dead = new Proxy({}, { get: () => () => Promise.reject(new Error("redis down")) }) as RedisClientType;

  it("counts in process while Redis is down or failing, and frees those slots in process", async () => {
    let up = false;
    const l = new FallbackConnectionLimiter({ up: () => up, answered: (p) => p }, new RedisConnectionLimiter(dead, 10_000));
    expect(await acquireN(l, "t1", ["a", "b", "c"], 2)).toEqual([true, true, false]);
    up = true; // says it is up, but fails the call: still counted here
    expect(await l.acquire("t1", "d", 2)).toBe(false);
    await l.release("t1", "a");
    expect(await l.acquire("t1", "e", 2)).toBe(true);
    await expect(l.refresh("t1", ["b", "e"])).resolves.toBeUndefined();
  });
});

describe.skipIf(!haveRedisBinary)("FallbackConnectionLimiter with a Redis that stops answering (skipped: no redis-server)", () => {
  it("opens and renews streams from the in-process count within the Redis timeout, then through Redis again", async () => {
    const server = await privateRedis();
    const shared = connectRedis(server.url, createLogger({ level: "silent" }), { timeoutMs: 300, maxBackoffMs: 200 });
    try {
      const l = new FallbackConnectionLimiter(shared, new RedisConnectionLimiter(shared.client, 10_000));
      const t = `hang-${randomBytes(4).toString("hex")}`;
      while (!shared.up()) await new Promise((r) => setTimeout(r, 20));
      expect(await l.acquire(t, "before", 2)).toBe(true);

      server.pause();
      const t0 = performance.now();
      // the first call waits out the timeout; the next ones know Redis is silent and do not wait
      expect(await l.acquire(t, "during-1", 2)).toBe(true);
      expect(await l.acquire(t, "during-2", 2)).toBe(true);
      expect(await l.acquire(t, "during-3", 2)).toBe(false);
      await l.refresh(t, ["before", "during-1"]);
      await l.release(t, "during-1");
      expect(performance.now() - t0).toBeLessThan(1_000);

      server.resume();
      while (!shared.up()) await new Promise((r) => setTimeout(r, 20));
      // counted in Redis again (the acquire sent before the pause holds its slot there until its lease ends)
      const t2 = `${t}-after`;
      expect(await acquireN(l, t2, ["a", "b", "c"], 2)).toEqual([true, true, false]);
      expect(await shared.client.zCard(`icv:sse:{${t2}}`)).toBe(2);
    } finally {
      await shared.close();
      await server.close();
    }
  });
});
