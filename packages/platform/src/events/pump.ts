import type { Logger } from "../logger.ts";
import { isTransientDbError } from "../transient.ts";

export interface Pump {
  /** Run again now (a NOTIFY or a local write said there is work). */
  wake(): void;
  /** Stops after the current run. */
  stop(): Promise<void>;
}

/**
 * Runs `once` in a loop, one run at a time: again while it answers true (a full batch, more is
 * waiting) or a wake came during the run, else after intervalMs or at the next wake. A run
 * starts no sooner than `windowMs` after the previous one started (a full batch excepted), so the
 * wake-ups of many commits coalesce into one run that handles all their events.
 * A failed run is logged and retried after the interval (at most a second); a database outage
 * is logged once when it starts and once when it ends, not on every retry.
 */
export function startPump(name: string, once: () => Promise<boolean>, intervalMs: number, logger: Logger, windowMs = 0): Pump {
  let stopped = false;
  let woken = false;
  let release: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;
  const wake = () => {
    woken = true;
    clearTimeout(timer);
    release?.();
  };
  let outage = false;
  let lastStart = -Infinity;
  let full = false;
  const loop = async () => {
    while (!stopped) {
      const early = lastStart + windowMs - performance.now();
      if (early > 0 && !full) {
        await new Promise((r) => setTimeout(r, early));
        if (stopped) break;
      }
      lastStart = performance.now();
      woken = false;
      let more = false;
      let wait = intervalMs;
      try {
        more = await once();
        full = more;
        if (outage) logger.info({ pump: name }, "event pump: working again");
        outage = false;
      } catch (err) {
        // the database or the Kafka broker away: once per outage, not on every retry
        const away = isTransientDbError(err) || /^KafkaJS/.test((err as Error)?.name ?? "");
        if (!away) logger.error({ err, pump: name }, "event pump run failed");
        else if (!outage) logger.warn({ err, pump: name }, "event pump: database or broker unavailable; retrying");
        outage ||= away;
        woken = false;
        full = false;
        wait = Math.min(intervalMs, 1_000);
      }
      if (stopped || more || woken) continue;
      await new Promise<void>((resolve) => {
        release = resolve;
        timer = setTimeout(resolve, wait);
        timer.unref();
      });
      release = undefined;
    }
  };
  const done = loop();
  return {
    wake,
    async stop() {
      stopped = true;
      wake();
      await done;
    },
  };
}
