import type { RedisClientType } from "redis";
import type { SharedRedis } from "@icv/platform";

/**
 * Counts a tenant's open event streams. `acquire` takes a slot for one connection id when fewer
 * than `limit` are held; `release` frees it; `refresh` (Redis only) renews the leases of
 * connections that are still open.
 */
export interface ConnectionLimiter {
  acquire(tenantId: string, connId: string, limit: number): Promise<boolean>;
  release(tenantId: string, connId: string): Promise<void>;
  refresh?(tenantId: string, connIds: string[]): Promise<void>;
}

/** One gateway process: a count per tenant. */
export class MemoryConnectionLimiter implements ConnectionLimiter {
  private readonly counts = new Map<string, number>();

  async acquire(tenantId: string, _connId: string, limit: number): Promise<boolean> {
    const n = this.counts.get(tenantId) ?? 0;
    if (n >= limit) return false;
    this.counts.set(tenantId, n + 1);
    return true;
  }

  async release(tenantId: string, _connId?: string): Promise<void> {
    const n = (this.counts.get(tenantId) ?? 0) - 1;
    if (n > 0) this.counts.set(tenantId, n);
    else this.counts.delete(tenantId);
  }

  /** Open slots of a tenant (tests). */
  held(tenantId: string): number {
    return this.counts.get(tenantId) ?? 0;
  }
}

// Redis server time in ms, so replicas with skewed clocks agree on lease expiry
const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

// KEYS[1] the tenant's sorted set; ARGV: limit, lease ms, connection id
const ACQUIRE = `${NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`;

// KEYS[1] the tenant's sorted set; ARGV: lease ms, connection ids…
const REFRESH = `${NOW}
local expiry = now + tonumber(ARGV[1])
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], expiry, ARGV[i]) end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1`;

/**
 * Across gateway replicas: per tenant a sorted set of connection ids scored by lease expiry.
 * Acquire drops expired members, counts and adds in one atomic script; the hub refreshes the
 * leases of open streams on each heartbeat, and close removes the member. A replica that dies
 * without closing its streams loses its slots when their leases run out (`leaseMs`).
 */
export class RedisConnectionLimiter implements ConnectionLimiter {
  constructor(
    private readonly redis: RedisClientType,
    private readonly leaseMs: number,
  ) {}

  private key = (tenantId: string) => `icv:sse:{${tenantId}}`;

  async acquire(tenantId: string, connId: string, limit: number): Promise<boolean> {
    const r = await this.redis.eval(ACQUIRE, { keys: [this.key(tenantId)], arguments: [String(limit), String(this.leaseMs), connId] });
    return Number(r) === 1;
  }

  async release(tenantId: string, connId: string): Promise<void> {
    await this.redis.zRem(this.key(tenantId), connId);
  }

  async refresh(tenantId: string, connIds: string[]): Promise<void> {
    if (!connIds.length) return;
    await this.redis.eval(REFRESH, { keys: [this.key(tenantId)], arguments: [String(this.leaseMs), ...connIds] });
  }
}

/**
 * Redis while it answers, this replica's counts meanwhile (DECISIONS.md: Redis down degrades,
 * never stops the API). A stream is released and renewed where its slot was taken.
 */
export class FallbackConnectionLimiter implements ConnectionLimiter {
  private readonly inMemory = new Set<string>();

  constructor(
    private readonly redis: Pick<SharedRedis, "up" | "answered">,
    private readonly primary: RedisConnectionLimiter,
    private readonly fallback: MemoryConnectionLimiter = new MemoryConnectionLimiter(),
  ) {}

  async acquire(tenantId: string, connId: string, limit: number): Promise<boolean> {
    if (this.redis.up()) {
      try {
        return await this.redis.answered(this.primary.acquire(tenantId, connId, limit));
      } catch {
        // Redis failed mid-call: count in process
      }
    }
    const ok = await this.fallback.acquire(tenantId, connId, limit);
    if (ok) this.inMemory.add(connId);
    return ok;
  }

  async release(tenantId: string, connId: string): Promise<void> {
    if (this.inMemory.delete(connId)) return this.fallback.release(tenantId, connId);
    // a lease Redis cannot hear about now runs out by itself
    if (this.redis.up()) await this.redis.answered(this.primary.release(tenantId, connId));
  }

  async refresh(tenantId: string, connIds: string[]): Promise<void> {
    if (this.redis.up())
      await this.redis.answered(
        this.primary.refresh(
          tenantId,
          connIds.filter((id) => !this.inMemory.has(id)),
        ),
      );
  }
}
