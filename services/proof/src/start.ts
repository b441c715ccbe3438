import path from "node:path";
import { fileURLToPath } from "node:url";
import {
  createEventLog,
  dataDirSecret,
  hostService,
  openServiceDatabase,
  startSweeper,
  systemClock,
  type Clock,
  type Config,
  type Logger,
  type RunningService,
} from "@icv/platform";
import { KeyRing } from "./keyring.ts";
import { followRedactions } from "./redaction.ts";
import { proofCallers } from "./callers.ts";
import { RevocationLists } from "./revocation-list.ts";
import { StatusIndexes, StatusLists } from "./status-lists.ts";
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
  // proof states are read from memory until their next proof event (store.revocations); a list's
  // JWT until one of its proofs changes (lists.follow): these events tell every replica
  const events = await createEventLog(config, log);
  const revocations = await store.revocations.follow(events, ["proof"]);
  const lists = new StatusLists(store, keys, clock, config.publicBaseUrl);
  const listChanges = await lists.follow(events);
  // a redacted verification's proof loses its stored SD-JWT VC (docs/privacy.md)
  const redactions = await followRedactions(events, db, log);
  const presented = startSweeper("presentations-seen", () => store.sweepPresented(clock.now()), 60_000, log);
  return hostService(config, "proof", {
    rpcName: "icv.proof.v1.ProofService",
    logger: log,
    db,
    outbox: true,
    callers: proofCallers,
    routes: proofRoutes(
      {
        store,
        keys,
        clock,
        issuer: config.issuer,
        publicBaseUrl: config.publicBaseUrl,
        indexes: new StatusIndexes(store),
        lists,
        // a token validated again is not verified again (RS256): only its expiry and state are checked
        verified: new VerifiedTokens(),
        verifiedCredentials: new VerifiedTokens(),
      },
      new RevocationLists(store, keys, clock),
    ),
    async onClose() {
      await presented.stop();
      await listChanges.close();
      await redactions.close();
      await revocations.close();
      await events.close();
    },
  });
}
