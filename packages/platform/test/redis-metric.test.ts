// icv_redis_up: what an SRE alerts on when Redis goes away (the limits are then kept in process):
// 1 while the connection is ready, 0 while Redis is stopped, 1 again once it is back, and gone
// when the connection is closed. With a private redis-server (skipped, saying so, without one).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectRedis, createLogger, metricsText } from "../src/index.ts";
import { haveRedisBinary, privateRedis, type PrivateRedis } from "../../../test/support/private-servers.ts";
import { waitFor } from "../../../test/support/expect-error.ts";

const logger = createLogger({ level: "silent" });
let redis: PrivateRedis | undefined;

beforeAll(async () => {
  if (haveRedisBinary) redis = await privateRedis();
});
afterAll(async () => {
  await redis?.close();
});

/** The value of icv_redis_up for a service, undefined when the series is absent. */
async function redisUp(service: string): Promise<number | undefined> {
  const line = (await metricsText()).body.split("\n").find((l) => l.startsWith(`icv_redis_up{service="${service}"}`));
  return line === undefined ? undefined : Number(line.split(" ").at(-1));
}

describe.skipIf(!haveRedisBinary)("icv_redis_up (skipped: no redis-server)", () => {
  it("follows the connection: 1 while ready, 0 while Redis is stopped, 1 once it is back, gone after close", async () => {
    const r = connectRedis(redis!.url, logger, { timeoutMs: 250, maxBackoffMs: 200, service: "metric-test" });
    try {
      await waitFor(async () => (await redisUp("metric-test")) === 1, 10_000);
      await redis!.stop();
      await waitFor(async () => (await redisUp("metric-test")) === 0, 10_000);
      expect(r.up()).toBe(false);
      await redis!.start();
      await waitFor(async () => (await redisUp("metric-test")) === 1, 15_000);
      expect(r.up()).toBe(true);
    } finally {
      await r.close();
    }
    expect(await redisUp("metric-test")).toBeUndefined();
  }, 60_000);
});

describe.skipIf(!haveRedisBinary)("a Redis that hangs (skipped: no redis-server)", () => {
  it("fails an unanswered command after the timeout, reads as down (icv_redis_up 0) meanwhile, and as up once it answers", async () => {
    const r = connectRedis(redis!.url, logger, { timeoutMs: 300, maxBackoffMs: 200, service: "hang-test" });
    try {
      await waitFor(async () => (await redisUp("hang-test")) === 1, 10_000);
      redis!.pause();
      const t0 = performance.now();
      await expect(r.answered(r.client.ping())).rejects.toThrow(/no answer within 300 ms/);
      expect(performance.now() - t0).toBeGreaterThanOrEqual(290);
      expect(r.up()).toBe(false);
      expect(await redisUp("hang-test")).toBe(0);
      redis!.resume();
      await waitFor(async () => (await redisUp("hang-test")) === 1, 10_000);
      expect(r.up()).toBe(true);
      expect(await r.answered(r.client.ping())).toBe("PONG");
    } finally {
      redis!.resume();
      await r.close();
    }
  }, 30_000);

  it("closes without waiting for the commands a silent Redis never answers", async () => {
    const r = connectRedis(redis!.url, logger, { timeoutMs: 300, maxBackoffMs: 200, service: "hang-close" });
    try {
      await waitFor(async () => r.up(), 10_000);
      redis!.pause();
      await expect(r.answered(r.client.ping())).rejects.toThrow();
      const t0 = performance.now();
      await r.close();
      expect(performance.now() - t0).toBeLessThan(1_000);
    } finally {
      redis!.resume();
    }
  }, 30_000);
});

describe("icv_redis_up with nothing listening", () => {
  it("is 0 from the start", async () => {
    const r = connectRedis("redis://127.0.0.1:1", logger, { timeoutMs: 250, maxBackoffMs: 200, service: "nowhere" });
    try {
      await waitFor(async () => (await redisUp("nowhere")) === 0, 10_000);
    } finally {
      await r.close();
    }
  });
});
