import type { NextFunction, Request, Response } from "express";
import { AppError, type Scope } from "@icv/platform";
import { hashApiKey, KeyCache, parseApiKey } from "./api-keys.ts";
import type { GatewayStore } from "./store.ts";
import type { RateLimiter } from "./rate-limit.ts";

export interface KeyAuth {
  middleware(req: Request, res: Response, next: NextFunction): void;
  /** Forget cached lookups (after a key is revoked on this replica). */
  forget(): void;
}

export interface FailureLimit {
  limiter: RateLimiter;
  perMinute: number;
}

/**
 * Bearer API keys: shape check, then a cached lookup by SHA-256 (a revoked key is refused
 * everywhere within the cache TTL). The key's environment is the request's environment.
 * Failed attempts are counted per client IP: past `failures.perMinute` the answer is 429, so
 * guessing keys (or flooding key lookups) is throttled.
 */
export function keyAuth(store: GatewayStore, ttlMs: number, failures: FailureLimit): KeyAuth {
  const cache = new KeyCache<(Scope & { keyId: string }) | null>(ttlMs);
  return {
    forget: () => cache.clear(),
    middleware(req, _res, next) {
      const header = req.get("authorization") ?? "";
      const m = /^Bearer\s+(\S+)$/i.exec(header);
      const fail = () =>
        failures.limiter.consume(`authfail:${req.ip}`, failures.perMinute).then((d) => {
          if (!d.allowed) {
            next(new AppError("rate_limited", "too many requests with a missing or invalid API key", { extra: { retry_after: d.retryAfter } }));
            return;
          }
          next(new AppError("unauthorized", m ? "invalid API key" : "missing API key: send Authorization: Bearer pk_live_… or pk_test_…"));
        }, next);
      if (!m || !parseApiKey(m[1])) return fail();
      const hash = hashApiKey(m[1]);
      const hit = cache.get(hash);
      const done = (found: (Scope & { keyId: string }) | null) => {
        if (!found) return fail();
        req.scope = { tenantId: found.tenantId, env: found.env };
        req.keyId = found.keyId;
        next();
      };
      if (hit !== undefined) return done(hit);
      store.keyByHash(hash).then((k) => {
        const found = k && !k.revoked_at ? { tenantId: k.tenant_id, env: k.environment, keyId: k.id } : null;
        cache.set(hash, found);
        done(found);
      }, next);
    },
  };
}

/** 100/min per key (or per client IP on public routes), with the X-RateLimit-* headers on every answer. */
export function rateLimit(limiter: RateLimiter, limit: number, keyOf: (req: Request) => string) {
  return (req: Request, res: Response, next: NextFunction): void => {
    limiter.consume(keyOf(req), limit).then((d) => {
      res.setHeader("X-RateLimit-Limit", String(d.limit));
      res.setHeader("X-RateLimit-Remaining", String(d.remaining));
      res.setHeader("X-RateLimit-Reset", String(d.resetAt));
      if (d.allowed) return next();
      next(new AppError("rate_limited", `rate limit of ${d.limit} requests per minute exceeded`, { extra: { retry_after: d.retryAfter } }));
    }, next);
  };
}
