import type { ServerResponse } from "node:http";
import type { NextFunction, Request, Response } from "express";
import { AppError, type EventLog, type Logger, type Scope, type Subscription } from "@icv/platform";
import { hashApiKey, KeyCache, parseApiKey } from "./api-keys.ts";
import type { GatewayStore } from "./store.ts";
import type { RateDecision, RateLimiter } from "./rate-limit.ts";

export interface KeyAuth {
  middleware(req: Request, res: Response, next: NextFunction): void;
  /**
   * The key of an Authorization header when its lookup is cached and found a live key; undefined
   * otherwise (no key, a bad one, a refused one, or not looked up yet: the middleware decides).
   */
  peek(authorization: string | undefined): Found | undefined;
  /** Forget cached lookups (after a key is revoked on this replica). */
  forget(): void;
}

export interface FailureLimit {
  limiter: RateLimiter;
  perMinute: number;
}

/**
 * Bearer API keys: shape check, then a cached lookup by SHA-256 (a revoked key is refused
 * everywhere once its event arrives: followKeyRevocations; the cache TTL is the fallback). The key's environment is the request's environment.
 * Failed attempts are counted per client IP: past `failures.perMinute` the answer is 429, so
 * guessing keys (or flooding key lookups) is throttled.
 */
export function keyAuth(store: GatewayStore, ttlMs: number, failures: FailureLimit, logger: Logger): KeyAuth {
  const cache = new KeyCache<Found | null>(ttlMs);
  // no closures made per request: this runs on every keyed request
  const fail = (req: Request, next: NextFunction, shaped: boolean) =>
    failures.limiter.consume(`authfail:${req.ip}`, failures.perMinute).then((d) => {
      if (!d.allowed) {
        next(new AppError("rate_limited", "too many requests with a missing or invalid API key", { extra: { retry_after: d.retryAfter } }));
        return;
      }
      next(new AppError("unauthorized", shaped ? "invalid API key" : "missing API key: send Authorization: Bearer pk_live_… or pk_test_…"));
    }, next);
  const done = (req: Request, next: NextFunction, found: Found | null) => {
    if (!found) return fail(req, next, true);
    req.scope = { tenantId: found.tenantId, env: found.env };
    req.keyId = found.keyId;
    next();
  };
  return {
    forget: () => cache.clear(),
    peek(authorization) {
      const m = BEARER.exec(authorization ?? "");
      return m && parseApiKey(m[1]) ? (cache.get(hashApiKey(m[1])) ?? undefined) : undefined;
    },
    middleware(req, _res, next) {
      const m = BEARER.exec(req.headers.authorization ?? "");
      if (!m) return fail(req, next, false);
      if (!parseApiKey(m[1])) return fail(req, next, true);
      const hash = hashApiKey(m[1]);
      const hit = cache.get(hash);
      if (hit !== undefined) return done(req, next, hit);
      store.keyByHash(hash).then((k) => {
        const found = k && !k.revoked_at ? { tenantId: k.tenant_id, env: k.environment, keyId: k.id } : null;
        cache.set(hash, found);
        // last_used_at for the key lists, written beside the request (at most once a minute per key)
        if (k && found) store.touchKey(k, new Date()).catch((err) => logger.warn({ err, key_id: k.id }, "could not record the key's last use"));
        done(req, next, found);
      }, next);
    },
  };
}

/**
 * Forgets the cached lookups as soon as a key is revoked anywhere (the api_key.revoked event, on
 * every worker and replica); the cache TTL stays the fallback should the event be late.
 */
export function followKeyRevocations(auth: KeyAuth, events: EventLog): Promise<Subscription> {
  return events.broadcast({
    topics: ["api_key"],
    name: "api key revocations",
    onEvent: (e) => {
      if (e.eventType === "api_key.revoked") auth.forget();
    },
  });
}

export type Found = Scope & { keyId: string };
const BEARER = /^Bearer\s+(\S+)$/i;

/** 100/min per key (or per client IP on public routes), with the X-RateLimit-* headers on every answer. */
export function rateLimit(limiter: RateLimiter, limit: number, keyOf: (req: Request) => string) {
  return (req: Request, res: Response, next: NextFunction): void => {
    limiter.consume(keyOf(req), limit).then((d) => {
      const refused = rateHeaders(res, d);
      if (refused) next(refused);
      else next();
    }, next);
  };
}

/** Sets the X-RateLimit-* headers of a decision; answers the error of a refusal. */
export function rateHeaders(res: ServerResponse, d: RateDecision): AppError | undefined {
  res.setHeader("X-RateLimit-Limit", String(d.limit));
  res.setHeader("X-RateLimit-Remaining", String(d.remaining));
  res.setHeader("X-RateLimit-Reset", String(d.resetAt));
  if (d.allowed) return undefined;
  return new AppError("rate_limited", `rate limit of ${d.limit} requests per minute exceeded`, { extra: { retry_after: d.retryAfter } });
}
