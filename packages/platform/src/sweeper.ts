import type { Logger } from "./logger.ts";
import { isTransientDbError } from "./transient.ts";
import { runsBackgroundWork } from "./workers.ts";

/**
 * Runs `sweep` every intervalMs, one run at a time; errors are logged and the next tick tries
 * again. Several replicas may sweep at once: the store's SKIP LOCKED keeps them apart. Under
 * `npm start` with several workers only the background worker sweeps (workers.ts).
 */
export function startSweeper(name: string, sweep: () => Promise<number>, intervalMs: number, logger: Logger): { stop(): Promise<void> } {
  if (!runsBackgroundWork()) return { stop: async () => {} };
  let running: Promise<void> | undefined;
  const tick = () => {
    if (running) return;
    running = sweep()
      .then((n) => {
        if (n) logger.info({ sweeper: name, moved: n }, "sweep");
      })
      // a database outage is not a bug: warn (the next tick tries again)
      .catch((err) =>
        isTransientDbError(err)
          ? logger.warn({ sweeper: name, reason: "database unavailable" }, "sweep skipped")
          : logger.error({ err, sweeper: name }, "sweep failed"),
      )
      .finally(() => {
        running = undefined;
      });
  };
  const timer = setInterval(tick, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
