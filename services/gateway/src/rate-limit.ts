import type { RedisClientType } from "redis";

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Unix seconds when the current window ends. */
  resetAt: number;
  /** Seconds to wait before a retry can succeed (when not allowed). */
  retryAfter: number;
}

/** Sliding-window limiter: the previous window's count weighted by how much of it still overlaps, plus the current one's. */
export interface RateLimiter {
  consume(key: string, limit: number): Promise<RateDecision>;
}

const WINDOW_MS = 60_000;

function decide(allowed: boolean, cur: number, prev: number, limit: number, now: number): RateDecision {
  const windowStart = Math.floor(now / WINDOW_MS) * WINDOW_MS;
  const weight = 1 - (now - windowStart) / WINDOW_MS;
  const used = Math.ceil(prev * weight + cur);
  let retryAfter = 0;
  if (!allowed) {
    // within this window the estimate falls as the previous window slides out; when that is not
    // enough, this window's count becomes the previous one and must slide out far enough itself
    const room = limit - 1 - cur;
    const waitMs =
      room >= 0 && prev > 0
        ? windowStart + WINDOW_MS * (1 - room / prev) - now
        : windowStart + WINDOW_MS - now + WINDOW_MS * Math.max(0, 1 - (limit - 1) / cur);
    retryAfter = Math.max(1, Math.ceil(waitMs / 1000));
  }
  return { allowed, limit, remaining: Math.max(0, limit - used), resetAt: Math.ceil((windowStart + WINDOW_MS) / 1000), retryAfter };
}

export class MemoryRateLimiter implements RateLimiter {
  private readonly windows = new Map<string, { start: number; cur: number; prev: number }>();
  private lastSweep = Date.now();

  constructor(private readonly now: () => number = Date.now) {}

  async consume(key: string, limit: number): Promise<RateDecision> {
    const now = this.now();
    const start = Math.floor(now / WINDOW_MS) * WINDOW_MS;
    let w = this.windows.get(key);
    if (!w || w.start < start - WINDOW_MS) w = { start, cur: 0, prev: 0 };
    else if (w.start < start) w = { start, cur: 0, prev: w.cur };
    this.windows.set(key, w);
    const weight = 1 - (now - start) / WINDOW_MS;
    const allowed = w.prev * weight + w.cur + 1 <= limit;
    if (allowed) w.cur++;
    this.sweep(now);
    return decide(allowed, w.cur, w.prev, limit, now);
  }

  private sweep(now: number) {
    if (now - this.lastSweep < WINDOW_MS) return;
    this.lastSweep = now;
    for (const [k, w] of this.windows) if (w.start < now - 2 * WINDOW_MS) this.windows.delete(k);
  }
}

// KEYS[1] current window counter, KEYS[2] previous; ARGV: weight of previous, limit, ttl ms
const SCRIPT = `
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
local prev = tonumber(redis.call('GET', KEYS[2]) or '0')
if prev * tonumber(ARGV[1]) + cur + 1 > tonumber(ARGV[2]) then return {0, cur, prev} end
cur = redis.call('INCR', KEYS[1])
if cur == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return {1, cur, prev}`;

/** The same algorithm in Redis (one round trip, atomic), so the limit holds across gateway replicas. */
export class RedisRateLimiter implements RateLimiter {
  constructor(private readonly redis: RedisClientType, private readonly now: () => number = Date.now) {}

  async consume(key: string, limit: number): Promise<RateDecision> {
    const now = this.now();
    const idx = Math.floor(now / WINDOW_MS);
    const weight = 1 - (now - idx * WINDOW_MS) / WINDOW_MS;
    const r = (await this.redis.eval(SCRIPT, {
      keys: [`icv:rl:{${key}}:${idx}`, `icv:rl:{${key}}:${idx - 1}`],
      arguments: [String(weight), String(limit), String(2 * WINDOW_MS + 1000)],
    })) as [number, number, number];
    return decide(r[0] === 1, Number(r[1]), Number(r[2]), limit, now);
  }
}
