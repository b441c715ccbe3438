import { backoffDelay, sleep } from "../backoff.ts";
import type { Logger } from "../logger.ts";

/** The part of a kafkajs Consumer that keepConsuming uses (fakes in tests implement it). */
export interface ConsumerLike {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  on(event: string, listener: (e: { payload: { error?: Error; restart?: boolean } }) => void): () => void;
  readonly events: { CRASH: string; GROUP_JOIN: string };
}

export interface KeptConsumer {
  /** Joined its group and consuming now. */
  up(): boolean;
  /** Resolves at the first join (a broadcast's "from now on"). */
  joined: Promise<void>;
  close(): Promise<void>;
}

/**
 * Keeps a consumer running for as long as it is not closed: makes it, connects and `run`s it
 * (subscribe and run inside), and when that fails or the consumer crashes for good (kafkajs gave
 * up: restart false), drops it and starts a new one after a backoff. Never throws to its caller:
 * a broker that is away at start or later only delays consumption. Logged once per outage.
 */
export function keepConsuming<C extends ConsumerLike>(
  make: () => C,
  run: (c: C) => Promise<void>,
  opts: { logger: Logger; maxBackoffMs: number; name: string },
): KeptConsumer {
  let closed = false;
  let current: C | undefined;
  let up = false;
  let outage = false;
  let wakeClose: (() => void) | undefined;
  let joinedOnce: () => void = () => undefined;
  const joined = new Promise<void>((resolve) => (joinedOnce = resolve));
  const closing = new AbortController();
  const loop = async () => {
    for (let attempt = 0; !closed; ) {
      const c = make();
      current = c;
      const crashed = new Promise<Error>((resolve) => {
        c.on(c.events.CRASH, ({ payload }) => {
          up = false;
          if (!payload.restart) resolve(payload.error ?? new Error("consumer crashed"));
        });
        wakeClose = () => resolve(new Error("closed"));
      });
      c.on(c.events.GROUP_JOIN, () => {
        up = true;
        attempt = 0;
        joinedOnce();
        if (outage) opts.logger.info({ consumer: opts.name }, "kafka consumer back");
        outage = false;
      });
      try {
        await c.connect();
        await run(c);
        const err = await crashed;
        if (closed) break;
        throw err;
      } catch (err) {
        up = false;
        if (closed) break;
        if (!outage) opts.logger.warn({ err: (err as Error).message, consumer: opts.name }, "kafka consumer unavailable; reconnecting with backoff");
        outage = true;
        await c.disconnect().catch(() => undefined);
        await sleep(backoffDelay(attempt++, { maxMs: opts.maxBackoffMs }), closing.signal);
      }
    }
  };
  const done = loop();
  return {
    up: () => up,
    joined,
    async close() {
      closed = true;
      up = false;
      closing.abort();
      wakeClose?.();
      await current?.disconnect().catch(() => undefined);
      await done;
    },
  };
}
