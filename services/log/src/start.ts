import path from "node:path";
import { fileURLToPath } from "node:url";
import {
  createEventLog,
  dataDirSecret,
  hostService,
  openServiceDatabase,
  runsBackgroundWork,
  systemClock,
  trackLogPending,
  type Clock,
  type Config,
  type Logger,
  type RunningService,
} from "@icv/platform";
import { logCallers } from "./callers.ts";
import { LOG_CONSUMER_GROUP, LOGGED_EVENTS, logConsumer } from "./consumer.ts";
import { ensureLogKey, originOf, type LogKey } from "./log-key.ts";
import { logRoutes } from "./rpc/log.ts";
import { Sequencer } from "./sequencer.ts";
import { LogStore, type LogEnv } from "./store/log.ts";

/** How long the log's consumer gathers proof events before one transaction queues them. */
const CONSUMER_WINDOW_MS = 250;
const MIGRATIONS = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "migrations");

/**
 * Starts the transparency log: its database, each environment's log key (generated at the first
 * start), the consumer of the proof events, the sequencer (one replica at a time, by lease) and the
 * RPC server of the public reads.
 */
export async function startLogService(config: Config, logger: Logger, clock: Clock = systemClock): Promise<RunningService> {
  const log = logger.child({ service: "log" });
  const db = await openServiceDatabase(config, "log", MIGRATIONS, log);
  const kek = Buffer.from(config.LOG_KEY_ENCRYPTION_KEY ?? dataDirSecret(config.DATA_DIR, "log-kek", "LOG_KEY_ENCRYPTION_KEY", log), "base64");
  const store = new LogStore(db);
  const keys = new Map<LogEnv, LogKey>();
  for (const env of ["live", "test"] as const) keys.set(env, await ensureLogKey(store, env, originOf(config.publicBaseUrl, env), kek, log));
  const sequencer = new Sequencer({ store, keys, clock, logger: log });
  // under `npm start` with workers, the background worker sequences (as it consumes); replicas
  // elsewhere wait for the lease
  if (runsBackgroundWork()) {
    await sequencer.init();
    sequencer.start();
  }
  // the log has 5 s to log an event: its consumer gathers a quarter of a second of proof events
  // into one transaction instead of waking for each commit
  const events = await createEventLog({ ...config, EVENT_BATCH_WINDOW_MS: Math.max(config.EVENT_BATCH_WINDOW_MS, CONSUMER_WINDOW_MS) }, log);
  const consumer = await events.consume({
    group: LOG_CONSUMER_GROUP,
    topics: ["proof"],
    eventTypes: LOGGED_EVENTS,
    db,
    schema: "log",
    ...logConsumer(() => sequencer.wake()),
  });
  const untrack = trackLogPending({}, () => store.pendingCount());
  return hostService(config, "log", {
    rpcName: "icv.log.v1.LogService",
    logger: log,
    db,
    callers: logCallers,
    routes: logRoutes(store, keys),
    async onClose() {
      untrack();
      await consumer.close();
      await sequencer.stop();
      await events.close();
    },
  });
}
