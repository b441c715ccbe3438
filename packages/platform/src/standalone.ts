import tls from "node:tls";
import type { ConfigShape } from "./config-section.ts";
import { ConfigError, loadConfig, type Config, type ServiceName } from "./config.ts";
import { createLogger, type Logger } from "./logger.ts";
import { onShutdown } from "./boot.ts";
import { startObservability } from "./observe.ts";
import { certificateProblem, serviceIdentity, type InternalName, type TlsIdentity } from "./tls.ts";

/**
 * One TLS handshake with `peer` as `identity`: undefined when it succeeds, the certificate
 * problem when there is one, "down" when nobody answers properly (yet).
 */
function handshake(url: string, peer: string, identity: TlsIdentity, config: Config): Promise<string | undefined> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const socket = tls.connect({
      host: u.hostname,
      port: Number(u.port || 443),
      servername: peer,
      secureContext: identity.secureContext,
      ALPNProtocols: ["h2"],
    });
    const done = (r: string | undefined) => {
      socket.destroy();
      resolve(r);
    };
    socket.setTimeout(2_000, () => done("down"));
    // TLS 1.3: the server judges our certificate after our handshake ends; its alert arrives with the first read
    socket.once("secureConnect", () => setTimeout(() => done(undefined), 200));
    socket.once("error", (e) => done(certificateProblem(e, config) ?? "down"));
  });
}

/**
 * Until each peer first answers a handshake (a peer that is late is waited for, as every
 * dependency is): a peer whose certificate this process cannot trust means the processes were
 * given different CAs (each its own DATA_DIR, say), which no retry mends, so `refuse` is called
 * with the variable to set. Stops with the process (the timers do not hold it).
 */
function checkPeers(config: Config, identity: TlsIdentity, peers: ServiceName[], refuse: (message: string) => void): () => void {
  let stopped = false;
  const check = async (peer: ServiceName, wait: number) => {
    if (stopped) return;
    const url = config.serviceUrl(peer);
    const r = await handshake(url, peer, identity, config);
    if (stopped || r === undefined) return;
    if (r !== "down") return refuse(`invalid configuration: ${peer.toUpperCase()}_URL (${url}) cannot be called: ${r}`);
    setTimeout(() => void check(peer, Math.min(wait * 2, config.RETRY_BACKOFF_MAX_MS)), wait).unref();
  };
  for (const peer of peers) void check(peer, 200);
  return () => {
    stopped = true;
  };
}

/**
 * The entry of one service started alone (`services/<name>/src/main.ts`): its configuration
 * marked `alone`, observability with its own metrics listener, the service, a graceful shutdown.
 * A split deployment that cannot work refuses to start with one line naming what to set (exit
 * 1): a service on the embedded database whose events other processes would need
 * (openServiceDatabase), events followed from a service whose database this process cannot
 * reach (the postgres transport), or a peer in `calls` whose certificate is not of this
 * process's CA. `sections`: the configuration the service declares beyond the platform's (the
 * verification channels' keys), validated with the rest.
 */
export async function runAlone<S extends { close(): Promise<void> }>(
  name: InternalName,
  calls: ServiceName[],
  start: (config: Config, logger: Logger) => Promise<S>,
  ...sections: ConfigShape[]
): Promise<S> {
  const config: Config = { ...loadConfig(process.env, ...sections), alone: name };
  const logger = createLogger({ level: config.LOG_LEVEL });
  const refuse = (message: string): never => {
    process.stderr.write(`${message}\n`);
    process.exit(1);
  };
  try {
    const identity = calls.length ? await serviceIdentity(config, name, logger) : undefined;
    const stopChecks = identity ? checkPeers(config, identity, calls, refuse) : () => {};
    const observability = await startObservability(config, logger, `icv-${name}`, { metricsServer: true });
    const svc = await start(config, logger);
    onShutdown(async () => {
      stopChecks();
      identity?.close();
      await svc.close();
      await observability();
    }, logger);
    return svc;
  } catch (e) {
    if (e instanceof ConfigError) refuse(e.message);
    throw e;
  }
}
