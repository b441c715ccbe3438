// The shared limiter as services create it: in process without REDIS_URL, through Redis when it
// answers, and in process while it does not (DECISIONS.md: Redis down degrades, never stops).
import { describe, expect, it } from "vitest";
import { createLogger, createRateLimiter, MemoryRateLimiter } from "@icv/platform";

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
