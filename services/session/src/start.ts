import { createHmac } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { VerificationService } from "@icv/contracts/gen/icv/verification/v1/verification_service_pb.ts";
import { ProjectService } from "@icv/contracts/gen/icv/verification/v1/project_service_pb.ts";
import {
  dataDirSecret,
  hostService,
  messagingProviders,
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
import { sessionCallers } from "./callers.ts";
import { CHAT_TTL_MS, Inbound, type Repliers } from "./inbound.ts";
import { sessionRoutes } from "./rpc/routes.ts";
import { Sessions } from "./sessions.ts";
import { InboundStore } from "./store/inbound.ts";
import { SessionStore } from "./store/sessions.ts";

const MIGRATIONS = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "migrations");
/** Handled inbound message ids are remembered this long (providers retry for at most a day or so). */
const INBOUND_MEMORY_MS = 7 * 24 * 3600_000;

/** The reply clients of the configured providers. */
export function repliersOf(config: Config): Repliers {
  return Object.fromEntries(messagingProviders().map(([name, p]) => [name, p.messenger(config)]));
}

/**
 * Starts the session service: sessions (phone-first and auth), their expiry sweeper, inbound
 * provider updates (and each provider's start-up work: Telegram's setWebhook or long-polling
 * loop, Viber's set_webhook).
 */
export async function startSessionService(config: Config, logger: Logger, clock: Clock = systemClock): Promise<RunningService> {
  const log = logger.child({ service: "session" });
  const db = await openServiceDatabase(config, "session", MIGRATIONS, log);
  // a session's number and client_metadata are sealed at rest, senders kept as blind indexes (docs/privacy.md)
  const pd = PersonalData.fromConfig(config, log);
  const store = new SessionStore(db, pd);
  const inbox = new InboundStore(db, pd);
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
  const inbound = new Inbound({ store: inbox, sessions, verification, repliers, clock, logger: log, hmacKey });
  const sweeper = startSweeper("session-expiry", () => sessions.expireDue(), config.SWEEP_INTERVAL_MS, log);
  const pruner = startSweeper(
    "inbound-prune",
    () => inbox.prune(new Date(clock.now().getTime() - INBOUND_MEMORY_MS), new Date(clock.now().getTime() - CHAT_TTL_MS)),
    Math.max(config.SWEEP_INTERVAL_MS, 60_000),
    log,
  );

  // each provider's start-up work (Telegram: setWebhook or long polling; Viber: set_webhook), on one
  // process: under `npm start` with several workers the background worker's (every worker answers
  // the hooks; Telegram answers a second getUpdates with 409)
  const started = runsBackgroundWork()
    ? messagingProviders().flatMap(([name, p]) => {
        const deliver = async (body: Uint8Array) => void (await inbound.handle(name, body));
        return p.start?.(config, { publicBaseUrl: config.publicBaseUrl, deliver, log }) ?? [];
      })
    : [];

  return hostService(config, "session", {
    rpcName: "icv.session.v1.SessionService",
    logger: log,
    db,
    identity,
    callers: sessionCallers,
    routes: sessionRoutes(sessions, inbound),
    async onClose() {
      await Promise.all(started.map((s) => s.stop()));
      await sweeper.stop();
      await pruner.stop();
      await inbound.drain();
    },
  });
}
