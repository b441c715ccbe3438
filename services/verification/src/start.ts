import path from "node:path";
import { fileURLToPath } from "node:url";
import { ProofService } from "@icv/contracts/gen/icv/proof/v1/proof_service_pb.ts";
import {
  dataDirSecret, hostService, openServiceDatabase, rpcClient, startSweeper, systemClock,
  type Clock, type Config, type Logger, type RunningService,
} from "@icv/platform";
import { verificationRoutes } from "./service.ts";
import { VerificationStore } from "./store.ts";
import { Verifications } from "./verifications.ts";
import { smtpMailer } from "./mailer.ts";

const MIGRATIONS = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "migrations");

/** Starts the verification service: database, migrations, expiry sweeper, RPC server. */
export async function startVerificationService(config: Config, logger: Logger, clock: Clock = systemClock): Promise<RunningService> {
  const log = logger.child({ service: "verification" });
  const db = await openServiceDatabase(config, "verification", MIGRATIONS, log);
  const store = new VerificationStore(db);
  const verifications = new Verifications({
    store,
    proofs: rpcClient(ProofService, config.serviceUrl("proof")),
    config,
    clock,
    hmacKey: config.CHALLENGE_HMAC_KEY ?? dataDirSecret(config.DATA_DIR, "challenge-hmac-key", "CHALLENGE_HMAC_KEY", log),
    logger: log,
    mailer: smtpMailer(config),
  });
  const sweeper = startSweeper("verification-expiry", () => verifications.expireDue(), config.SWEEP_INTERVAL_MS, log);
  return hostService(config, "verification", {
    rpcName: "icv.verification.v1.VerificationService",
    logger: log,
    db,
    outbox: true,
    routes: verificationRoutes(verifications, store),
    onClose: () => sweeper.stop(),
  });
}
