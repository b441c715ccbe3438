import { createClient, type RedisClientType } from "redis";
import { backoffDelay } from "./backoff.ts";
import type { Logger } from "./logger.ts";
import { trackRedisUp } from "./metrics.ts";

/** A Redis connection that never holds up a caller: see connectRedis. */
export interface SharedRedis {
  readonly client: RedisClientType;
  /** Connected and answering now (no round trip: /health and every limiter read this). */
  up(): boolean;
  /**
   * The command's answer, or an error once timeoutMs passed without one. node-redis's own command
   * timeout ends when the command is written: one written to a Redis that hangs would wait for ever.
   * The first command left unanswered marks Redis down (up() false, icv_redis_up 0, logged once)
   * until it answers again, so callers count in process at once instead of waiting on every call.
   */
  answered<T>(command: Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export interface RedisOptions {
  /** A command unanswered after this many ms fails (answered(); the caller then counts in process). */
  timeoutMs: number;
  /** Longest wait between reconnect attempts. */
  maxBackoffMs: number;
  /** Who holds the connection: the `service` label of icv_redis_up. */
  service?: string;
}

/**
 * Connects in the background and reconnects forever with backoff; commands fail at once while it
 * is down (no offline queue) and after timeoutMs when it hangs (answered). A start never waits for
 * Redis. The change between up and down is logged once each way, not on every failed attempt, and
 * icv_redis_up shows the state (until close).
 */
export function connectRedis(url: string, logger: Logger, opts: RedisOptions): SharedRedis {
  const client: RedisClientType = createClient({
    url,
    disableOfflineQueue: true,
    // no timer per command (node-redis's stops at the socket anyway): answered() bounds the wait
    commandOptions: { timeout: 0 },
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
  // the wait of a Redis that hangs: a PING queued behind the unanswered commands ends it when
  // Redis answers them; a dropped connection ends it when the client is ready again
  let silent = false;
  const fallSilent = () => {
    if (silent) return;
    silent = true;
    become("down", new Error(`no answer within ${opts.timeoutMs} ms`));
    client.ping().then(
      () => {
        silent = false;
        become("up");
      },
      () => undefined,
    );
  };
  client.on("error", (err: Error) => become("down", err));
  client.on("ready", () => {
    silent = false;
    become("up");
  });
  client.on("end", () => become("down"));
  client.connect().catch((err: Error) => become("down", err));
  const up = () => client.isReady && !silent;
  const untrack = trackRedisUp({ service: opts.service ?? "unnamed" }, () => (up() ? 1 : 0));
  const answered = <T>(command: Promise<T>) =>
    new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        fallSilent();
        reject(new Error(`redis: no answer within ${opts.timeoutMs} ms`));
      }, opts.timeoutMs);
      command.then(
        (v) => {
          clearTimeout(timer);
          resolve(v);
        },
        (e: unknown) => {
          clearTimeout(timer);
          reject(e);
        },
      );
    });
  return {
    client,
    up,
    answered,
    async close() {
      untrack();
      // an answering client finishes its commands; one (re)connecting or silent is dropped at once
      if (up()) await answered(client.close()).catch(() => undefined);
      if (client.isOpen) client.destroy();
    },
  };
}
