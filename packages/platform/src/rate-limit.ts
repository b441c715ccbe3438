import { createHash } from "node:crypto";
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
      room >= 0 && prev > 0 ? windowStart + windowMs * (1 - room / prev) - now : windowStart + windowMs - now + windowMs * Math.max(0, 1 - (limit - 1) / cur);
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

// KEYS[1] current window counter, KEYS[2] previous; ARGV: weight of previous, limit, ttl ms, n.
// Takes n units one after the other as n separate calls would (each while the estimate plus one
// stays within the limit; a refused one changes nothing, so all after it are refused too) and
// answers how many were allowed with the counts before them.
const SCRIPT = `
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
local prev = tonumber(redis.call('GET', KEYS[2]) or '0')
local w, limit, n = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[4] or '1')
local k = 0
while k < n and prev * w + cur + k + 1 <= limit do k = k + 1 end
if k > 0 and redis.call('INCRBY', KEYS[1], k) == k then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return {k, cur, prev}`;
const SCRIPT_SHA = createHash("sha1").update(SCRIPT).digest("hex");
const REFUND = `if tonumber(redis.call('GET', KEYS[1]) or '0') > 0 then redis.call('DECR', KEYS[1]) end return 0`;

interface Waiter {
  resolve(d: RateDecision): void;
  reject(e: unknown): void;
}

/**
 * The same algorithm in Redis (atomic), so the limit holds across replicas. The calls of one key
 * (and limit and window) made in the same turn of the event loop go together, at the end of that
 * turn, as one script run that takes their units in order: the decisions are those of the same
 * calls one after the other, at one round trip and one script run for all of them. Under load a
 * turn handles many requests, so a busy key costs a round trip per turn instead of one per
 * request; a lone call waits for nothing but the end of its turn.
 */
export class RedisRateLimiter implements RateLimiter {
  private readonly gathering = new Map<string, Waiter[]>();
  private scriptLoaded = false;

  constructor(
    private readonly redis: RedisClientType,
    private readonly now: () => number = Date.now,
  ) {}

  consume(key: string, limit: number, windowMs = MINUTE): Promise<RateDecision> {
    const id = `${windowMs} ${limit} ${key}`;
    let waiting = this.gathering.get(id);
    if (!waiting) {
      const batch: Waiter[] = (waiting = []);
      this.gathering.set(id, batch);
      // (scheduled by the batch's first call: with tracing on, its span is in that call's trace)
      setImmediate(() => {
        this.gathering.delete(id);
        this.send(key, limit, windowMs, batch);
      });
    }
    const batch = waiting;
    return new Promise<RateDecision>((resolve, reject) => batch.push({ resolve, reject }));
  }

  private send(key: string, limit: number, windowMs: number, batch: Waiter[]): void {
    const now = this.now();
    const idx = Math.floor(now / windowMs);
    const weight = 1 - (now - idx * windowMs) / windowMs;
    const keys = [`icv:rl:{${key}}:${idx}`, `icv:rl:{${key}}:${idx - 1}`];
    const args = [String(weight), String(limit), String(2 * windowMs + 1000), String(batch.length)];
    redisSpan("EVAL", "rate_limit", () => this.run(keys, args)).then(
      (r) => {
        const [allowed, cur, prev] = (r as [number, number, number]).map(Number);
        batch.forEach((w, i) => {
          w.resolve(decide(i < allowed, cur + Math.min(i + 1, allowed), prev, limit, now, windowMs));
        });
      },
      (err: unknown) => {
        for (const w of batch) w.reject(err);
      },
    );
  }

  /** The script by its hash (loaded once per server; a server that lost it gets the text again). */
  private async run(keys: string[], args: string[]): Promise<unknown> {
    if (this.scriptLoaded) {
      try {
        return await this.redis.evalSha(SCRIPT_SHA, { keys, arguments: args });
      } catch (err) {
        if (!String((err as Error)?.message).startsWith("NOSCRIPT")) throw err;
      }
    }
    const r = await this.redis.eval(SCRIPT, { keys, arguments: args });
    this.scriptLoaded = true;
    return r;
  }

  async refund(key: string, windowMs = MINUTE): Promise<void> {
    await redisSpan("EVAL", "rate_limit_refund", () =>
      this.redis.eval(REFUND, { keys: [`icv:rl:{${key}}:${Math.floor(this.now() / windowMs)}`], arguments: [] }),
    );
  }
}

/**
 * Redis while it answers, the in-process limiter meanwhile (DECISIONS.md: Redis down degrades,
 * never stops the API). The switch itself is logged by connectRedis, once each way.
 */
export class FallbackRateLimiter implements RateLimiter {
  constructor(
    private readonly redis: Pick<SharedRedis, "up" | "answered">,
    private readonly primary: RateLimiter,
    private readonly fallback: RateLimiter,
    private readonly logger: Logger,
  ) {}

  private async run<T>(op: (l: RateLimiter) => Promise<T>): Promise<T> {
    if (!this.redis.up()) return op(this.fallback);
    try {
      return await this.redis.answered(op(this.primary));
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
  service?: string,
): { limiter: RateLimiter; close(): Promise<void> } {
  const redis = config.REDIS_URL
    ? connectRedis(config.REDIS_URL, logger, {
        timeoutMs: config.REDIS_TIMEOUT_MS ?? 250,
        maxBackoffMs: config.RETRY_BACKOFF_MAX_MS ?? 5_000,
        service,
      })
    : undefined;
  return { limiter: rateLimiterOn(redis, logger, now), close: async () => redis?.close() };
}
