import type { RedisClientType } from "redis";
import type { Config } from "./config.ts";
import type { Logger } from "./logger.ts";
import { connectRedis, type SharedRedis } from "./redis.ts";
import { redisSpan } from "./tracing.ts";

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Unix seconds when the current window ends. */
  resetAt: number;
  /** Seconds to wait before a retry can succeed (when not allowed). */
  retryAfter: number;
}

/**
 * Sliding-window limiter: the previous window's count weighted by how much of it still overlaps,
 * plus the current one's. Windows are aligned to multiples of `windowMs` (default one minute);
 * a key is always used with the same window.
 */
export interface RateLimiter {
  consume(key: string, limit: number, windowMs?: number): Promise<RateDecision>;
  /** Gives back one unit a consume() took in the current window (a send that was refused by a later check). */
  refund(key: string, windowMs?: number): Promise<void>;
}

const MINUTE = 60_000;

function decide(allowed: boolean, cur: number, prev: number, limit: number, now: number, windowMs: number): RateDecision {
  const windowStart = Math.floor(now / windowMs) * windowMs;
  const weight = 1 - (now - windowStart) / windowMs;
  const used = Math.ceil(prev * weight + cur);
  let retryAfter = 0;
  if (!allowed) {
    // within this window the estimate falls as the previous window slides out; when that is not
    // enough, this window's count becomes the previous one and must slide out far enough itself
    const room = limit - 1 - cur;
    const waitMs =
      room >= 0 && prev > 0
        ? windowStart + windowMs * (1 - room / prev) - now
        : windowStart + windowMs - now + windowMs * Math.max(0, 1 - (limit - 1) / cur);
    retryAfter = Math.max(1, Math.ceil(waitMs / 1000));
  }
  return { allowed, limit, remaining: Math.max(0, limit - used), resetAt: Math.ceil((windowStart + windowMs) / 1000), retryAfter };
}

export class MemoryRateLimiter implements RateLimiter {
  private readonly windows = new Map<string, { start: number; size: number; cur: number; prev: number }>();
  private lastSweep = Date.now();

  constructor(private readonly now: () => number = Date.now) {}

  async consume(key: string, limit: number, windowMs = MINUTE): Promise<RateDecision> {
    const now = this.now();
    const start = Math.floor(now / windowMs) * windowMs;
    let w = this.windows.get(key);
    if (!w || w.start < start - windowMs) w = { start, size: windowMs, cur: 0, prev: 0 };
    else if (w.start < start) w = { start, size: windowMs, cur: 0, prev: w.cur };
    this.windows.set(key, w);
    const weight = 1 - (now - start) / windowMs;
    const allowed = w.prev * weight + w.cur + 1 <= limit;
    if (allowed) w.cur++;
    this.sweep(now);
    return decide(allowed, w.cur, w.prev, limit, now, windowMs);
  }

  async refund(key: string, windowMs = MINUTE): Promise<void> {
    const w = this.windows.get(key);
    if (w && w.start === Math.floor(this.now() / windowMs) * windowMs && w.cur > 0) w.cur--;
  }

  private sweep(now: number) {
    if (now - this.lastSweep < MINUTE) return;
    this.lastSweep = now;
    for (const [k, w] of this.windows) if (w.start < now - 2 * w.size) this.windows.delete(k);
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
const REFUND = `if tonumber(redis.call('GET', KEYS[1]) or '0') > 0 then redis.call('DECR', KEYS[1]) end return 0`;

/** The same algorithm in Redis (one round trip, atomic), so the limit holds across replicas. */
export class RedisRateLimiter implements RateLimiter {
  constructor(private readonly redis: RedisClientType, private readonly now: () => number = Date.now) {}

  async consume(key: string, limit: number, windowMs = MINUTE): Promise<RateDecision> {
    const now = this.now();
    const idx = Math.floor(now / windowMs);
    const weight = 1 - (now - idx * windowMs) / windowMs;
    const r = (await redisSpan("EVAL", "rate_limit", () =>
      this.redis.eval(SCRIPT, {
        keys: [`icv:rl:{${key}}:${idx}`, `icv:rl:{${key}}:${idx - 1}`],
        arguments: [String(weight), String(limit), String(2 * windowMs + 1000)],
      }),
    )) as [number, number, number];
    return decide(r[0] === 1, Number(r[1]), Number(r[2]), limit, now, windowMs);
  }

  async refund(key: string, windowMs = MINUTE): Promise<void> {
    await redisSpan("EVAL", "rate_limit_refund", () => this.redis.eval(REFUND, { keys: [`icv:rl:{${key}}:${Math.floor(this.now() / windowMs)}`], arguments: [] }));
  }
}

/**
 * Redis while it answers, the in-process limiter meanwhile (DECISIONS.md: Redis down degrades,
 * never stops the API). The switch itself is logged by connectRedis, once each way.
 */
export class FallbackRateLimiter implements RateLimiter {
  constructor(
    private readonly redis: Pick<SharedRedis, "up">,
    private readonly primary: RateLimiter,
    private readonly fallback: RateLimiter,
    private readonly logger: Logger,
  ) {}

  private async run<T>(op: (l: RateLimiter) => Promise<T>): Promise<T> {
    if (!this.redis.up()) return op(this.fallback);
    try {
      return await op(this.primary);
    } catch (err) {
      this.logger.debug({ err: (err as Error).message }, "redis rate limiter failed; counting in process");
      return op(this.fallback);
    }
  }

  consume(key: string, limit: number, windowMs?: number) {
    return this.run((l) => l.consume(key, limit, windowMs));
  }

  refund(key: string, windowMs?: number) {
    return this.run((l) => l.refund(key, windowMs));
  }
}

/** The limiter over a shared Redis connection (in process while it is down), or in process only. */
export function rateLimiterOn(redis: SharedRedis | undefined, logger: Logger, now: () => number = Date.now): RateLimiter {
  const memory = new MemoryRateLimiter(now);
  return redis ? new FallbackRateLimiter(redis, new RedisRateLimiter(redis.client, now), memory, logger) : memory;
}

/**
 * The limiter a service counts with: Redis when REDIS_URL is set (shared by replicas; in process
 * while Redis is unreachable), in process otherwise. `close` ends the Redis connection.
 */
export function createRateLimiter(
  config: Pick<Config, "REDIS_URL"> & Partial<Pick<Config, "REDIS_TIMEOUT_MS" | "RETRY_BACKOFF_MAX_MS">>,
  logger: Logger,
  now: () => number = Date.now,
): { limiter: RateLimiter; close(): Promise<void> } {
  const redis = config.REDIS_URL
    ? connectRedis(config.REDIS_URL, logger, { timeoutMs: config.REDIS_TIMEOUT_MS ?? 250, maxBackoffMs: config.RETRY_BACKOFF_MAX_MS ?? 5_000 })
    : undefined;
  return { limiter: rateLimiterOn(redis, logger, now), close: async () => redis?.close() };
}
