import { createHmac } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { VerificationService } from "@icv/contracts/gen/icv/verification/v1/verification_service_pb.ts";
import { ProjectService } from "@icv/contracts/gen/icv/verification/v1/project_service_pb.ts";
import {
  dataDirSecret,
  hostService,
  messagingSenders,
  openServiceDatabase,
  PersonalData,
  rpcClient,
  runsBackgroundWork,
  serviceIdentity,
  startSweeper,
  systemClock,
  type Clock,
  type Config,
  type Logger,
  type RunningService,
} from "@icv/platform";
import { CHAT_TTL_MS, Inbound, type Repliers } from "./inbound.ts";
import { TelegramClient, startTelegramPolling } from "./providers/telegram.ts";
import { sessionCallers } from "./callers.ts";
import { sessionRoutes } from "./service.ts";
import { Sessions } from "./sessions.ts";
import { SessionStore } from "./store.ts";

const MIGRATIONS = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "migrations");
/** Handled inbound message ids are remembered this long (providers retry for at most a day or so). */
const INBOUND_MEMORY_MS = 7 * 24 * 3600_000;

/** The reply clients of the configured providers. */
export function repliersOf(config: Config): Repliers {
  return {
    telegram: config.TELEGRAM_BOT_TOKEN ? new TelegramClient({ apiUrl: config.TELEGRAM_API_URL, botToken: config.TELEGRAM_BOT_TOKEN }) : undefined,
    ...messagingSenders(config),
  };
}

/**
 * Starts the session service: sessions (phone-first and auth), their expiry sweeper, inbound
 * provider updates (and, for Telegram, setWebhook at start or the long-polling loop).
 */
export async function startSessionService(config: Config, logger: Logger, clock: Clock = systemClock): Promise<RunningService> {
  const log = logger.child({ service: "session" });
  const db = await openServiceDatabase(config, "session", MIGRATIONS, log);
  // a session's number and client_metadata are sealed at rest, senders kept as blind indexes (docs/privacy.md)
  const store = new SessionStore(db, PersonalData.fromConfig(config, log));
  const hmacKey = config.CHALLENGE_HMAC_KEY ?? dataDirSecret(config.DATA_DIR, "challenge-hmac-key", "CHALLENGE_HMAC_KEY", log);
  const identity = await serviceIdentity(config, "session", log);
  const verification = rpcClient(VerificationService, config.serviceUrl("verification"), identity);
  const sessions = new Sessions({
    store,
    verification,
    config,
    clock,
    key: createHmac("sha256", hmacKey).update("icv session tokens").digest("base64"),
    logger: log,
    projects: rpcClient(ProjectService, config.serviceUrl("verification"), identity),
  });
  const repliers = repliersOf(config);
  const inbound = new Inbound({ store, sessions, verification, repliers, clock, logger: log, hmacKey });
  const sweeper = startSweeper("session-expiry", () => sessions.expireDue(), config.SWEEP_INTERVAL_MS, log);
  const pruner = startSweeper(
    "inbound-prune",
    () => store.prune(new Date(clock.now().getTime() - INBOUND_MEMORY_MS), new Date(clock.now().getTime() - CHAT_TTL_MS)),
    Math.max(config.SWEEP_INTERVAL_MS, 60_000),
    log,
  );

  let polling: { stop(): Promise<void> } | undefined;
  // one poller per bot (Telegram answers a second getUpdates with 409) and one setWebhook: under
  // `npm start` with several workers the background worker's (every worker answers /hooks/telegram)
  const bot = runsBackgroundWork() ? repliers.telegram : undefined;
  if (bot && config.TELEGRAM_MODE === "polling") {
    polling = startTelegramPolling(bot, async (u) => void (await inbound.handle("telegram", Buffer.from(JSON.stringify(u)))), log);
    log.info("telegram: long polling for updates");
  } else if (bot && config.TELEGRAM_WEBHOOK_SECRET) {
    const url = `${config.publicBaseUrl}/hooks/telegram`;
    // in the background, and a failure is logged, not fatal: the rest of the service works, and the next start tries again
    void bot.setWebhook(url, config.TELEGRAM_WEBHOOK_SECRET).then(
      () => log.info({ url }, "telegram: webhook set"),
      (err: Error) => log.error({ err: err.message }, "telegram: setWebhook failed"),
    );
  }

  return hostService(config, "session", {
    rpcName: "icv.session.v1.SessionService",
    logger: log,
    db,
    identity,
    callers: sessionCallers,
    routes: sessionRoutes(sessions, inbound),
    async onClose() {
      await polling?.stop();
      await sweeper.stop();
      await pruner.stop();
      await inbound.drain();
    },
  });
}
