import { createHash } from "node:crypto";
import type { NextFunction, Request, Response } from "express";
import { AppError, isTransientDbError, retryWithBackoff } from "@icv/platform";
import type { GatewayStore } from "./store.ts";

const KEY_RE = /^[\x21-\x7e]{1,255}$/;
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * `Idempotency-Key` on POST: the first answer (status and body) is stored; the same key with the
 * same body replays it; a different body is 422 idempotency_conflict; the same key while the
 * first request is still running is 409. Server errors are not stored, so a retry runs again.
 */
export function idempotency(store: GatewayStore) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const key = req.get("idempotency-key");
    if (req.method !== "POST" || key === undefined || !req.scope) return next();
    try {
      if (!KEY_RE.test(key)) throw new AppError("validation_error", "Idempotency-Key must be 1 to 255 visible ASCII characters");
      const scope = req.scope;
      const bodyHash = createHash("sha256")
        .update(JSON.stringify(req.body ?? null))
        .digest("hex");
      const prev = await store.claimIdempotencyKey(scope, key, { method: req.method, path: req.path, bodyHash });
      if (prev) {
        if (prev.body_hash !== bodyHash || prev.path !== req.path) {
          throw new AppError("idempotency_conflict", "this Idempotency-Key was used with a different request");
        }
        if (prev.status_code === null) throw new AppError("invalid_state", "a request with this Idempotency-Key is still in progress");
        res.setHeader("Idempotent-Replayed", "true");
        res.status(prev.status_code).json(prev.response_body);
        return;
      }
      const json = res.json.bind(res);
      res.json = (body: unknown) => {
        const done = res.statusCode >= 500 ? release(store, scope, key) : store.completeIdempotencyKey(scope, key, res.statusCode, body);
        done.then(
          () => json(body),
          () => json(body),
        );
        return res;
      };
      next();
    } catch (e) {
      next(e);
    }
  };
}

/**
 * Frees the key of a request that failed (5xx). When the database itself is away (the usual cause
 * of that 503) the release is tried again in the background for about a minute, so a retry after
 * the outage runs instead of meeting "still in progress" until the claim goes stale.
 */
function release(store: GatewayStore, scope: Parameters<GatewayStore["releaseIdempotencyKey"]>[0], key: string): Promise<void> {
  const first = store.releaseIdempotencyKey(scope, key);
  first.catch((e) => {
    if (!isTransientDbError(e)) return;
    let tries = 0;
    void retryWithBackoff(() => store.releaseIdempotencyKey(scope, key), {
      maxMs: 2_000,
      retryable: (err) => isTransientDbError(err) && ++tries < 40,
    }).catch(() => undefined);
  });
  return first;
}
