import path from "node:path";
import { fileURLToPath } from "node:url";
import {
  createEventLog,
  dataDirSecret,
  hostService,
  openServiceDatabase,
  systemClock,
  type Clock,
  type Config,
  type Logger,
  type RunningService,
} from "@icv/platform";
import { KeyRing } from "./keyring.ts";
import { proofCallers } from "./callers.ts";
import { RevocationLists } from "./revocation-list.ts";
import { proofRoutes } from "./rpc/proofs.ts";
import { KeyStore } from "./store/keys.ts";
import { ProofStore } from "./store/proofs.ts";
import { VerifiedTokens } from "./tokens.ts";

const MIGRATIONS = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "migrations");

/** Starts the proof service: database, migrations, first signing key of each set (live, test), RPC server. */
export async function startProofService(config: Config, logger: Logger, clock: Clock = systemClock): Promise<RunningService> {
  const log = logger.child({ service: "proof" });
  const db = await openServiceDatabase(config, "proof", MIGRATIONS, log, { outbox: true });
  const kek = Buffer.from(config.PROOF_KEY_ENCRYPTION_KEY ?? dataDirSecret(config.DATA_DIR, "proof-kek", "PROOF_KEY_ENCRYPTION_KEY", log), "base64");
  const store = new ProofStore(db);
  const keys = new KeyRing(new KeyStore(db), kek, config.PROOF_KEY_BITS, log);
  await keys.ensureAll();
  // revocation states are read from memory until their proof.revoked event (store.revocations)
  const events = await createEventLog(config, log);
  const revocations = await store.revocations.follow(events, ["proof"]);
  return hostService(config, "proof", {
    rpcName: "icv.proof.v1.ProofService",
    logger: log,
    db,
    outbox: true,
    callers: proofCallers,
    // a token validated again is not verified again (RS256): only its expiry and revocation are checked
    routes: proofRoutes({ store, keys, clock, issuer: config.issuer, verified: new VerifiedTokens() }, new RevocationLists(store, keys, clock)),
    async onClose() {
      await revocations.close();
      await events.close();
    },
  });
}
