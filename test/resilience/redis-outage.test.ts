// Redis stopped under load, as a tenant and an operator see it: the API keeps answering (limits
// counted in process meanwhile, no 5 s hang), /health says degraded with redis down, and all
// is shared again when Redis is back. A gateway started while Redis is down still listens.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { haveRedisBinary, privateRedis, type PrivateRedis } from "../support/private-servers.ts";
import { api, startStack, type Stack } from "../support/stack.ts";

let redis: PrivateRedis | undefined;
let stack: Stack | undefined;

beforeAll(async () => {
  if (!haveRedisBinary) return;
  redis = await privateRedis();
  await redis.stop(); // the stack starts while Redis is down
  // a limit the load below never reaches: every answer must be a 200, whichever store counts it
  stack = await startStack({ REDIS_URL: redis.url, RETRY_BACKOFF_MAX_MS: "200", REDIS_TIMEOUT_MS: "200", RATE_LIMIT_PER_MINUTE: "100000" });
});
afterAll(async () => {
  await stack?.close();
  await redis?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const health = async () => (await api(stack!.url).get("/health")).body as { status: string; services: Record<string, string> };
async function until(what: () => Promise<boolean>, ms = 5_000) {
  const end = Date.now() + ms;
  while (!(await what())) {
    if (Date.now() > end) throw new Error("timed out");
    await sleep(50);
  }
}

describe.skipIf(!haveRedisBinary)("Redis away (skipped: no redis-server)", () => {
  it("a gateway started without Redis answers, reports degraded, and shares limits once Redis is up", async () => {
    const started = await api(stack!.url).get("/health");
    expect(started.status).toBe(200);
    expect(started.body).toMatchObject({ status: "degraded", services: { redis: "down", database: "up" } });
    const t = await stack!.tenant("No redis");
    const c = api(stack!.url, t.testKey);
    expect((await c.get("/api/v1/verifications")).status).toBe(200);
    await redis!.start();
    await until(async () => (await health()).services.redis === "up");
    expect((await health()).status).toBe("healthy");
  });

  it("keeps answering while Redis is stopped under load, says so in /health, and recovers", async () => {
    await until(async () => (await health()).services.redis === "up");
    const t = await stack!.tenant("Redis outage");
    const c = api(stack!.url, t.testKey);
    const results: { status: number; ms: number; remaining: string | null }[] = [];
    let stop = false;
    const worker = async () => {
      while (!stop) {
        const at = Date.now();
        const r = await c.get("/api/v1/verifications?limit=1");
        results.push({ status: r.status, ms: Date.now() - at, remaining: r.headers.get("x-ratelimit-remaining") });
      }
    };
    const load = Promise.all([worker(), worker()]);
    await sleep(300);
    await redis!.stop();
    await sleep(800);
    const during = await api(stack!.url).get("/health");
    const jwks = await api(stack!.url).get("/.well-known/jwks.json");
    await redis!.start();
    await until(async () => (await health()).services.redis === "up");
    await sleep(200);
    stop = true;
    await load;

    expect(during.status).toBe(200);
    expect(during.body).toMatchObject({ status: "degraded", services: { redis: "down", database: "up", verification: "up", proof: "up" } });
    expect(jwks.status).toBe(200);
    // every request succeeded, with its rate-limit headers, none waited on the dead Redis
    expect(results.length).toBeGreaterThan(20);
    expect(results.filter((r) => r.status !== 200)).toEqual([]);
    expect(results.every((r) => r.remaining !== null)).toBe(true);
    expect(Math.max(...results.map((r) => r.ms))).toBeLessThan(1_000);
    expect((await health()).status).toBe("healthy");
  });

  it("keeps answering while Redis hangs (connected, answering nothing) under load, says so in /health, and recovers", async () => {
    await until(async () => (await health()).services.redis === "up");
    const t = await stack!.tenant("Redis hang");
    const c = api(stack!.url, t.testKey);
    const results: { status: number; ms: number; remaining: string | null; end: number }[] = [];
    let stop = false;
    const worker = async () => {
      while (!stop) {
        const at = Date.now();
        const r = await c.get("/api/v1/verifications?limit=1");
        results.push({ status: r.status, ms: Date.now() - at, remaining: r.headers.get("x-ratelimit-remaining"), end: Date.now() });
      }
    };
    const load = Promise.all([worker(), worker()]);
    await sleep(300);
    redis!.pause();
    const pausedAt = Date.now();
    await sleep(1_000);
    const during = await api(stack!.url).get("/health");
    await sleep(500);
    redis!.resume();
    const resumedAt = Date.now();
    await until(async () => (await health()).services.redis === "up");
    await sleep(200);
    stop = true;
    await load;

    expect(during.body).toMatchObject({ status: "degraded", services: { redis: "down", database: "up" } });
    // no request waited for the silent Redis longer than REDIS_TIMEOUT_MS (200 ms) and a margin,
    // and requests went on meanwhile: only the first ones waited the timeout out
    expect(results.filter((r) => r.status !== 200)).toEqual([]);
    expect(results.every((r) => r.remaining !== null)).toBe(true);
    expect(Math.max(...results.map((r) => r.ms))).toBeLessThan(1_000);
    expect(results.filter((r) => r.end > pausedAt + 500 && r.end < resumedAt).length).toBeGreaterThan(10);
    expect((await health()).status).toBe("healthy");
  });
});
