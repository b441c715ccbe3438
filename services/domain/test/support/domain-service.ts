// Starts the real domain service on a free loopback port (mutual TLS, its caller allow-list),
// configured by environment as in production, with every log line kept for inspection.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Client } from "@connectrpc/connect";
import { DomainService } from "@icv/contracts/gen/icv/domain/v1/domain_service_pb.ts";
import { createLogger, parseConfig, rpcClient, serviceIdentity, type InternalName } from "@icv/platform";
import { startDomainService } from "../../src/start.ts";

export interface TestDomainService {
  url: string;
  /** A client calling as the verification service (the allowed caller). */
  client: Client<typeof DomainService>;
  /** A client calling as another service. */
  as(name: InternalName): Promise<Client<typeof DomainService>>;
  /** Every log line the service wrote (level trace). */
  logs: string[];
  close(): Promise<void>;
}

export async function startTestDomainService(env: Record<string, string>, opts: { allowAddresses?: string[] } = {}): Promise<TestDomainService> {
  const dataDir = mkdtempSync(path.join(tmpdir(), "icv-domain-test-"));
  const config = parseConfig({
    DATA_DIR: dataDir,
    DOMAIN_GRPC_PORT: "0",
    GRPC_HOST: "127.0.0.1",
    LOG_LEVEL: "trace",
    SHUTDOWN_TIMEOUT_MS: "1000",
    ...env,
  });
  const logs: string[] = [];
  const logger = createLogger({ level: "trace", destination: { write: (s: string) => void logs.push(...s.split("\n").filter(Boolean)) } });
  const svc = await startDomainService(config, logger, opts);
  const identities: { close(): void }[] = [];
  const as = async (name: InternalName) => {
    const id = await serviceIdentity(config, name, logger);
    identities.push(id);
    return rpcClient(DomainService, svc.url, id);
  };
  const client = await as("verification");
  return {
    url: svc.url,
    client,
    as,
    logs,
    async close() {
      for (const id of identities) id.close();
      await svc.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
