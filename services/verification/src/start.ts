import { createHmac } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ProofService } from "@icv/contracts/gen/icv/proof/v1/proof_service_pb.ts";
import {
  createEventLog, dataDirSecret, hostService, messagingSenders, openServiceDatabase, rpcClient, startSweeper, systemClock,
  type Clock, type Config, type Logger, type RunningService,
} from "@icv/platform";
import { verificationRoutes } from "./service.ts";
import { RequestStore, VerificationStore } from "./store.ts";
import { Requests } from "./requests.ts";
import { verificationRequestRoutes } from "./request-service.ts";
import { Verifications } from "./verifications.ts";
import { smtpMailer } from "./mailer.ts";

const MIGRATIONS = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "migrations");

/** Starts the verification service: database, migrations, expiry sweepers, the request-state consumer, RPC server. */
export async function startVerificationService(config: Config, logger: Logger, clock: Clock = systemClock): Promise<RunningService> {
  const log = logger.child({ service: "verification" });
  const db = await openServiceDatabase(config, "verification", MIGRATIONS, log);
  const store = new VerificationStore(db);
  const hmacKey = config.CHALLENGE_HMAC_KEY ?? dataDirSecret(config.DATA_DIR, "challenge-hmac-key", "CHALLENGE_HMAC_KEY", log);
  const verifications = new Verifications({
    store,
    proofs: rpcClient(ProofService, config.serviceUrl("proof")),
    config,
    clock,
    hmacKey,
    logger: log,
    mailer: smtpMailer(config),
    senders: messagingSenders(config),
  });
  const sweeper = startSweeper("verification-expiry", () => verifications.expireDue(), config.SWEEP_INTERVAL_MS, log);
  const attemptsPruner = startSweeper(
    "inbound-attempts-prune",
    () => store.pruneInboundAttempts(new Date(clock.now().getTime() - 7 * 24 * 3600_000)),
    Math.max(config.SWEEP_INTERVAL_MS, 60_000),
    log,
  );

  // Verification requests: their token key is derived from the challenge HMAC key (one secret to
  // share between replicas); their state follows the verifications' own events.
  const requests = new Requests({
    store: new RequestStore(db),
    verifications,
    clock,
    config,
    tokenKey: createHmac("sha256", hmacKey).update("icv verification request tokens").digest("base64"),
    publicBaseUrl: config.publicBaseUrl,
    allowPrivateTargets: config.ALLOW_PRIVATE_TARGETS,
    logger: log,
  });
  const requestSweeper = startSweeper("verification-request-expiry", () => requests.expireDue(), config.SWEEP_INTERVAL_MS, log);
  const events = await createEventLog(config, log);
  const requestConsumer = await events.consume({
    group: "verification-requests",
    topics: ["verification"],
    db,
    schema: "verification",
    handle: (q, event) => requests.onEvent(q, event),
  });
  return hostService(config, "verification", {
    rpcName: "icv.verification.v1.VerificationService",
    logger: log,
    db,
    outbox: true,
    routes: (router) => {
      verificationRoutes(verifications, store, clock)(router);
      verificationRequestRoutes(requests)(router);
    },
    async onClose() {
      await sweeper.stop();
      await attemptsPruner.stop();
      await requestSweeper.stop();
      await requestConsumer.close();
      await events.close();
    },
  });
}
