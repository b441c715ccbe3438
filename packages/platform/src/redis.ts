import { createClient, type RedisClientType } from "redis";
import { backoffDelay } from "./backoff.ts";
import type { Logger } from "./logger.ts";
import { trackRedisUp } from "./metrics.ts";

/** A Redis connection that never holds up a caller: see connectRedis. */
export interface SharedRedis {
  readonly client: RedisClientType;
  /** Connected and answering now (no round trip: /health and every limiter read this). */
  up(): boolean;
  close(): Promise<void>;
}

export interface RedisOptions {
  /** Every command fails after this many ms (the caller then counts in process). */
  timeoutMs: number;
  /** Longest wait between reconnect attempts. */
  maxBackoffMs: number;
  /** Who holds the connection: the `service` label of icv_redis_up. */
  service?: string;
}

/**
 * Connects in the background and reconnects forever with backoff; commands fail at once while it
 * is down (no offline queue) and after timeoutMs when it hangs. A start never waits for Redis.
 * The change between up and down is logged once each way, not on every failed attempt, and
 * icv_redis_up shows the state (until close).
 */
export function connectRedis(url: string, logger: Logger, opts: RedisOptions): SharedRedis {
  const client: RedisClientType = createClient({
    url,
    disableOfflineQueue: true,
    commandOptions: { timeout: opts.timeoutMs },
    socket: {
      connectTimeout: Math.max(opts.timeoutMs, 1_000),
      reconnectStrategy: (retries: number) => backoffDelay(retries, { initialMs: 100, maxMs: opts.maxBackoffMs }),
    },
  });
  let state: "unknown" | "up" | "down" = "unknown";
  const become = (next: "up" | "down", err?: Error) => {
    if (state === next) return;
    if (next === "down") logger.warn({ err: err?.message }, "redis unavailable: rate limits and stream counts are kept in process until it is back");
    else if (state === "down") logger.info("redis back: limits are shared again");
    state = next;
  };
  client.on("error", (err: Error) => become("down", err));
  client.on("ready", () => become("up"));
  client.on("end", () => become("down"));
  client.connect().catch((err: Error) => become("down", err));
  const untrack = trackRedisUp({ service: opts.service ?? "unnamed" }, () => (client.isReady ? 1 : 0));
  return {
    client,
    up: () => client.isReady,
    async close() {
      untrack();
      // a ready client finishes its commands; one still (re)connecting is dropped at once
      if (client.isReady) await client.close().catch(() => undefined);
      else if (client.isOpen) client.destroy();
    },
  };
}
