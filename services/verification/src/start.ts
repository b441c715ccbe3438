import { createHmac } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ProofService } from "@icv/contracts/gen/icv/proof/v1/proof_service_pb.ts";
import { LogService } from "@icv/contracts/gen/icv/log/v1/log_service_pb.ts";
import { DomainService } from "@icv/contracts/gen/icv/domain/v1/domain_service_pb.ts";
import {
  createEventLog,
  createRateLimiter,
  dataDirSecret,
  hostService,
  messagingSenders,
  openServiceDatabase,
  PersonalData,
  rpcClient,
  serviceIdentity,
  startSweeper,
  systemClock,
  type Clock,
  type Config,
  type Logger,
  type RunningService,
} from "@icv/platform";
import { verificationCallers } from "./callers.ts";
import { verificationRoutes } from "./rpc/verifications.ts";
import { exportHandlers } from "./rpc/export.ts";
import { insightHandlers } from "./rpc/insights.ts";
import { personalDataHandlers } from "./rpc/personal-data.ts";
import { OAuthStore } from "./store/oauth.ts";
import { ProfileStore } from "./store/profiles.ts";
import { ProjectStore } from "./store/projects.ts";
import { RequestStore } from "./store/requests.ts";
import { TEST_MESSAGE_TTL_MS } from "./store/test-messages.ts";
import { isCreation } from "./store/events.ts";
import { VerificationStore } from "./store/verifications.ts";
import { OAuthSignIn } from "./oauth/sign-in.ts";
import { Profiles } from "./profiles/profiles.ts";
import { Projects } from "./projects/projects.ts";
import { profileRoutes } from "./rpc/profiles.ts";
import { projectRoutes } from "./rpc/projects.ts";
import type { RequestDeps } from "./requests/input.ts";
import { expireDueRequests, onRequestEvents, requestEvents, requestReturnUrl } from "./requests/lifecycle.ts";
import { verificationRequestRoutes } from "./rpc/requests.ts";
import { useCaseDeps } from "./verifications/deps.ts";
import { expireDue } from "./verifications/read.ts";
import { recheckDue } from "./verifications/domain-checks.ts";
import { smtpMailer } from "./sending/mailer.ts";
import { followProofRevocations } from "./proof-revocations.ts";
import { SendLimits } from "./sending/send-limits.ts";
import { checkVerificationKeys, sealOutdated, verificationDatabase } from "./store/sealing.ts";

/** The domain service's calls wait on name servers, web servers and provider APIs (each with its own deadline). */
const DOMAIN_RPC_TIMEOUT_MS = 45_000;
const MIGRATIONS = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "migrations");

/** Starts the verification service: database, migrations, expiry sweepers, the request-state and proof-revocation consumers, RPC server. */
export async function startVerificationService(config: Config, logger: Logger, clock: Clock = systemClock): Promise<RunningService> {
  const log = logger.child({ service: "verification" });
  // personal data is sealed at rest and opened on read (store/sealing.ts); rows this service cannot open refuse the start
  const pd = PersonalData.fromConfig(config, log);
  const db = verificationDatabase(await openServiceDatabase(config, "verification", MIGRATIONS, log, { outbox: true }), pd);
  await checkVerificationKeys(db, pd).catch(async (e) => {
    await db.close();
    throw e;
  });
  const store = new VerificationStore(db);
  const projectStore = new ProjectStore(db);
  const hmacKey = config.CHALLENGE_HMAC_KEY ?? dataDirSecret(config.DATA_DIR, "challenge-hmac-key", "CHALLENGE_HMAC_KEY", log);
  const identity = await serviceIdentity(config, "verification", log);
  // send limits count on the clock the service runs on (tests move it by hand)
  const rates = createRateLimiter(config, log, () => clock.now().getTime(), "verification");
  const proofs = rpcClient(ProofService, config.serviceUrl("proof"), identity);
  const mailer = smtpMailer(config);
  const verifications = useCaseDeps({
    store,
    proofs,
    // a check asks up to 4 name servers or two URLs with their own deadlines: room for them
    domains: rpcClient(DomainService, config.serviceUrl("domain"), identity, DOMAIN_RPC_TIMEOUT_MS),
    config,
    clock,
    hmacKey,
    logger: log,
    mailer,
    sendLimits: new SendLimits({ limiter: rates.limiter, keySecret: hmacKey, budgetPerHour: config.SEND_BUDGET_PER_HOUR, logger: log }),
    senders: messagingSenders(config),
    projects: projectStore,
  });
  const sweeper = startSweeper("verification-expiry", () => expireDue(verifications), config.SWEEP_INTERVAL_MS, log);
  // scheduled re-checks of verified domains (each due proof claimed by one replica at a time)
  const rechecks = startSweeper("domain-rechecks", () => recheckDue(verifications), config.RECHECK_SWEEP_MS, log);
  const attemptsPruner = startSweeper(
    "inbound-attempts-and-test-messages-prune",
    async () =>
      (await store.pruneInboundAttempts(new Date(clock.now().getTime() - 7 * 24 * 3600_000))) +
      (await store.pruneTestMessages(new Date(clock.now().getTime() - TEST_MESSAGE_TTL_MS))),
    Math.max(config.SWEEP_INTERVAL_MS, 60_000),
    log,
  );

  // Verification requests: their token key is derived from the challenge HMAC key (one secret to
  // share between replicas); their state follows the verifications' own events.
  const requests: RequestDeps = {
    store: new RequestStore(db),
    verifications,
    clock,
    config,
    tokenKey: createHmac("sha256", hmacKey).update("icv verification request tokens").digest("base64"),
    publicBaseUrl: config.publicBaseUrl,
    allowPrivateTargets: config.ALLOW_PRIVATE_TARGETS,
    logger: log,
    projects: projectStore,
  };
  const requestSweeper = startSweeper("verification-request-expiry", () => expireDueRequests(requests), config.SWEEP_INTERVAL_MS, log);
  const signIn = new OAuthSignIn({
    store: new OAuthStore(db),
    verifications,
    config,
    clock,
    hmacKey,
    logger: log,
    returnUrl: (scope, verificationId) => requestReturnUrl(requests, scope, verificationId),
  });
  // retention: settled verifications past their scope's retention_days are redacted, in batches, by one replica at a time
  const retention = startSweeper("retention", () => store.redaction.redactExpired(clock.now()), config.SWEEP_INTERVAL_MS, log);
  // rows written before sealing, or under an older key version, are sealed in batches meanwhile
  // (new rows are always sealed under the current version: once a pass finds none, it is done until the next start)
  let sealed = false;
  const sealer = startSweeper(
    "personal-data-sealing",
    async () => {
      if (sealed) return 0;
      const n = await sealOutdated(db);
      sealed = n === 0;
      return n;
    },
    config.SWEEP_INTERVAL_MS,
    log,
  );
  const statePruner = startSweeper("oauth-states-prune", () => signIn.pruneStates(), Math.max(config.SWEEP_INTERVAL_MS, 60_000), log);
  const events = await createEventLog(config, log);
  const requestConsumer = await events.consume({
    group: "verification-requests",
    topics: ["verification"],
    eventTypes: ["verification.status_changed"],
    db,
    schema: "verification",
    relevant: (events) => requestEvents(requests, events),
    handleBatch: (q, events) => onRequestEvents(requests, q, events),
  });
  // the proof service owns revocation: a revoked proof's verification follows by event
  const revocations = await followProofRevocations(events, db, store, log);
  // settled verifications are read from memory until their next event (store.settled); a
  // creation's event leaves the row its creator keeps for test-verify as it is (store.created)
  const settledCache = await store.settled.follow(events, ["verification"], isCreation);
  return hostService(config, "verification", {
    rpcName: "icv.verification.v1.VerificationService",
    logger: log,
    db,
    outbox: true,
    identity,
    callers: verificationCallers,
    routes: (router) => {
      verificationRoutes(
        verifications,
        store,
        clock,
        signIn,
        { ...exportHandlers(db), ...personalDataHandlers(verifications) },
        insightHandlers(db, clock),
      )(router);
      verificationRequestRoutes(requests)(router);
      projectRoutes(new Projects({ store: projectStore, clock, logoTargets: { allowPrivate: config.ALLOW_PRIVATE_TARGETS } }))(router);
      profileRoutes(new Profiles({ store: new ProfileStore(db), proofs, log: rpcClient(LogService, config.serviceUrl("log"), identity), clock }))(router);
    },
    async onClose() {
      await sweeper.stop();
      await rechecks.stop();
      await attemptsPruner.stop();
      await requestSweeper.stop();
      await statePruner.stop();
      await sealer.stop();
      await retention.stop();
      await requestConsumer.close();
      await revocations.close();
      await settledCache.close();
      await events.close();
      await rates.close();
      mailer?.close?.();
    },
  });
}
