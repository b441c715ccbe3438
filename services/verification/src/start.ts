import { createHmac } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ProofService } from "@icv/contracts/gen/icv/proof/v1/proof_service_pb.ts";
import {
  createEventLog, createRateLimiter, dataDirSecret, hostService, messagingSenders, openServiceDatabase, rpcClient, serviceIdentity, startSweeper, systemClock,
  type Clock, type Config, type Logger, type RunningService,
} from "@icv/platform";
import { verificationCallers } from "./callers.ts";
import { verificationRoutes } from "./rpc/verifications.ts";
import { RequestStore, VerificationStore } from "./store/index.ts";
import { Requests } from "./requests/index.ts";
import { verificationRequestRoutes } from "./rpc/requests.ts";
import { Verifications } from "./verifications/index.ts";
import { smtpMailer } from "./mailer.ts";
import { followProofRevocations } from "./proof-revocations.ts";
import { SendLimits } from "./send-limits.ts";

const MIGRATIONS = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "migrations");

/** Starts the verification service: database, migrations, expiry sweepers, the request-state and proof-revocation consumers, RPC server. */
export async function startVerificationService(config: Config, logger: Logger, clock: Clock = systemClock): Promise<RunningService> {
  const log = logger.child({ service: "verification" });
  const db = await openServiceDatabase(config, "verification", MIGRATIONS, log, { outbox: true });
  const store = new VerificationStore(db);
  const hmacKey = config.CHALLENGE_HMAC_KEY ?? dataDirSecret(config.DATA_DIR, "challenge-hmac-key", "CHALLENGE_HMAC_KEY", log);
  const identity = await serviceIdentity(config, "verification", log);
  // send limits count on the clock the service runs on (tests move it by hand)
  const rates = createRateLimiter(config, log, () => clock.now().getTime());
  const verifications = new Verifications({
    store,
    proofs: rpcClient(ProofService, config.serviceUrl("proof"), identity),
    config,
    clock,
    hmacKey,
    logger: log,
    mailer: smtpMailer(config),
    sendLimits: new SendLimits({ limiter: rates.limiter, keySecret: hmacKey, budgetPerHour: config.SEND_BUDGET_PER_HOUR, logger: log }),
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
  // the proof service owns revocation: a revoked proof's verification follows by event
  const revocations = await followProofRevocations(events, db, store, log);
  return hostService(config, "verification", {
    rpcName: "icv.verification.v1.VerificationService",
    logger: log,
    db,
    outbox: true,
    identity,
    callers: verificationCallers,
    routes: (router) => {
      verificationRoutes(verifications, store, clock)(router);
      verificationRequestRoutes(requests)(router);
    },
    async onClose() {
      await sweeper.stop();
      await attemptsPruner.stop();
      await requestSweeper.stop();
      await requestConsumer.close();
      await revocations.close();
      await events.close();
      await rates.close();
    },
  });
}
