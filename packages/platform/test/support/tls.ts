// Certificates for tests: a CA and every service's certificate in a temp dir (as `npm start`
// makes them), identities loaded from it, and grpc-js credentials for plain gRPC clients.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import { createLogger } from "../../src/logger.ts";
import { ensureTlsDir, TlsIdentity, tlsDirFiles, type CertKey } from "../../src/tls.ts";

const silent = createLogger({ level: "silent" });

export interface TestTls {
  dir: string;
  /** The identity of `name` from the dir (closed by cleanup()). */
  identity(name: string, reloadMs?: number): Promise<TlsIdentity>;
  /** The CA's certificate and key (to issue more certificates). */
  ca(): CertKey;
  cleanup(): void;
}

export async function testTls(): Promise<TestTls> {
  const dir = mkdtempSync(path.join(tmpdir(), "icv-tls-"));
  await ensureTlsDir(dir, silent);
  const loaded: TlsIdentity[] = [];
  return {
    dir,
    async identity(name, reloadMs) {
      const id = await TlsIdentity.load(name, tlsDirFiles(dir, name), silent, reloadMs);
      loaded.push(id);
      return id;
    },
    ca: () => ({ cert: readFileSync(path.join(dir, "ca.crt"), "utf8"), key: readFileSync(path.join(dir, "ca.key"), "utf8") }),
    cleanup() {
      for (const id of loaded) id.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** grpc-js credentials: trust `ca`, present `client` (or nothing). */
export function grpcCredentials(ca: string, client?: CertKey): grpc.ChannelCredentials {
  return client ? grpc.credentials.createSsl(Buffer.from(ca), Buffer.from(client.key), Buffer.from(client.cert)) : grpc.credentials.createSsl(Buffer.from(ca));
}

/**
 * Channel options for a server whose certificate names `serverName` reached at 127.0.0.1; each
 * channel its own connection (grpc-js otherwise shares one between equal clients).
 */
export const targetName = (serverName: string): grpc.ChannelOptions => ({
  "grpc.ssl_target_name_override": serverName,
  "grpc.default_authority": serverName,
  "grpc.use_local_subchannel_pool": 1,
});
