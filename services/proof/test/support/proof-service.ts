// Starts the real proof service on a free loopback port with a fresh database (PGlite in a temp
// dir, or a new database on the Postgres of DATABASE_URL), for service-level tests.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Client } from "@connectrpc/connect";
import { ProofService } from "@icv/contracts/gen/icv/proof/v1/proof_service_pb.ts";
import { createLogger, openDatabase, parseConfig, rpcClient, serviceIdentity, systemClock, type Clock, type Database } from "@icv/platform";
import { maybeFreshPostgres } from "../../../../test/support/fresh-postgres.ts";
import { proofCallers } from "../../src/callers.ts";
import { startProofService } from "../../src/start.ts";

export const TEST_ISSUER = "https://issuer.icv.test";

export interface TestProofService {
  url: string;
  /** Each RPC called as the service its allow-list names (verification, else the gateway). */
  client: Client<typeof ProofService>;
  /** Every RPC called as the gateway (to see the allow-list refuse it). */
  asGateway: Client<typeof ProofService>;
  close(): Promise<void>;
}

/**
 * `prepare` runs on the service's database before the service opens it (e.g. to lay down the
 * state an older release left: migrations so far and its rows).
 */
export async function startTestProofService(
  clock: Clock = systemClock,
  env: Record<string, string> = {},
  prepare?: (db: Database) => Promise<void>,
): Promise<TestProofService> {
  const dataDir = mkdtempSync(path.join(tmpdir(), "icv-proof-test-"));
  const db = await maybeFreshPostgres();
  if (prepare) {
    const before = await openDatabase(db ? { url: db.url, poolMax: 2 } : { dataDir: path.join(dataDir, "pgdata") });
    try {
      await prepare(before);
    } finally {
      await before.close();
    }
  }
  const config = parseConfig({
    DATA_DIR: dataDir,
    PROOF_GRPC_PORT: "0",
    GRPC_HOST: "127.0.0.1",
    LOG_LEVEL: "silent",
    PROOF_ISSUER: TEST_ISSUER,
    SHUTDOWN_TIMEOUT_MS: "1000",
    ...(db ? { DATABASE_URL: db.url } : {}),
    ...env,
  });
  const logger = createLogger({ level: "silent" });
  const svc = await startProofService(config, logger, clock);
  // each RPC is called as the service its allow-list names (verification, else the gateway)
  const [verification, gateway] = await Promise.all([serviceIdentity(config, "verification", logger), serviceIdentity(config, "gateway", logger)]);
  const asVerification = rpcClient(ProofService, svc.url, verification);
  const asGateway = rpcClient(ProofService, svc.url, gateway);
  const allowed = proofCallers[0].methods;
  const client = Object.fromEntries(
    Object.keys(ProofService.method).map((m) => [m, (allowed[m].includes("verification") ? asVerification : asGateway)[m as keyof typeof asGateway]]),
  ) as Client<typeof ProofService>;
  return {
    url: svc.url,
    client,
    asGateway,
    async close() {
      verification.close();
      gateway.close();
      await svc.close();
      await db?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
