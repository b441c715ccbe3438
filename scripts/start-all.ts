// `npm start`: every service in one process, each on its own loopback port, and the gateway on PORT.
// With WORKERS above 1 (the default on Postgres + Redis: one per CPU, less one beside a local database) this process is the
// primary: it forks that many such processes sharing the ports (packages/platform/src/workers.ts).
import cluster from "node:cluster";
// the primary of several workers loads only these (it serves nothing and stays small)
import { ConfigError, loadConfig } from "@icv/platform/config.ts";
import { createLogger } from "@icv/platform/logger.ts";
import { initWorker, runPrimary, workerPlan, workerSlot } from "@icv/platform/workers.ts";

const started = Date.now();
// the platform's keys; the processes that serve read the verification channels' keys too (startServices)
const base = loadConfig();
const slot = workerSlot();
const logger = slot === undefined ? createLogger({ level: base.LOG_LEVEL }) : createLogger({ level: base.LOG_LEVEL }).child({ worker: slot });

if (cluster.isPrimary) {
  let plan: ReturnType<typeof workerPlan>;
  try {
    plan = workerPlan(base);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    process.stderr.write(`${e.message}\n`);
    process.exit(1);
  }
  if (plan.workers > 1) {
    logger.info({ workers: plan.workers, reason: plan.reason }, "starting workers");
    runPrimary({
      workers: plan.workers,
      logger,
      poolMax: base.DB_POOL_MAX,
      stopTimeoutMs: base.SHUTDOWN_TIMEOUT_MS + 10_000,
      // the generated certificates (no TLS_*_FILE) are made here, so no two workers write them at once
      beforeFork: async () => {
        if (!base.TLS_CERT_FILE) await (await import("@icv/platform/tls.ts")).ensureTlsDir(base.tlsDir, logger);
      },
    });
  } else {
    await startServices().catch(refuse);
  }
} else {
  await startServices().catch(refuse);
}

/** A configuration that can only be judged while starting (INTERNAL_CLIENTS_FILE): one line, exit 1. */
function refuse(e: unknown): never {
  if (!(e instanceof ConfigError)) throw e;
  process.stderr.write(`${e.message}\n`);
  process.exit(1);
}

async function startServices(): Promise<void> {
  const worker = slot === undefined ? undefined : await initWorker();
  const [
    { onShutdown, startObservability },
    { startProofService },
    { startVerificationService },
    { startSessionService },
    { startDomainService },
    { startWebhookService },
    { startLogService },
    { startGateway },
    { printDevTenant },
    { CHANNEL_CONFIG },
  ] = await Promise.all([
    import("@icv/platform"),
    import("../services/proof/src/start.ts"),
    import("../services/verification/src/start.ts"),
    import("../services/session/src/start.ts"),
    import("../services/domain/src/start.ts"),
    import("../services/webhook/src/start.ts"),
    import("../services/log/src/start.ts"),
    import("../services/gateway/src/start.ts"),
    import("../services/gateway/src/print.ts"),
    import("../services/verification/src/channels/registry.ts"),
  ]);
  // the whole configuration: the platform's keys and the channels' (a bad one: one line, exit 1)
  const config = loadConfig(process.env, CHANNEL_CONFIG);
  // a bad client file stops the start before anything opens (the services read it again)
  if (config.INTERNAL_CLIENTS_FILE) {
    const { InternalClientsError, readInternalClients } = await import("@icv/platform/internal-clients.ts");
    try {
      readInternalClients(config.INTERNAL_CLIENTS_FILE);
    } catch (e) {
      if (e instanceof InternalClientsError) refuse(new ConfigError(`invalid configuration: INTERNAL_CLIENTS_FILE ${e.message}`));
      throw e;
    }
  }
  const running: Array<{ close(): Promise<void> }> = [];
  // metrics of every service here on the admin listener (GET /metrics); traces when OTLP is configured
  const observability = await startObservability(config, logger, "icv", { metricsServer: false });
  onShutdown(async () => {
    // the gateway first (no new requests), then the services it calls
    for (const s of running.reverse()) await s.close();
    await observability();
  }, logger);

  // services that call nobody first, then their callers
  running.push(
    ...(await Promise.all([
      startProofService(config, logger),
      startDomainService(config, logger),
      startWebhookService(config, logger),
      startLogService(config, logger),
    ])),
  );
  running.push(await startVerificationService(config, logger));
  running.push(await startSessionService(config, logger));
  const gw = await startGateway(config, logger);
  running.push(gw);
  logger.info({ url: gw.url, ms: Date.now() - started, node: process.version }, "ICV is up");
  worker?.ready();
  if (gw.devTenant) printDevTenant(gw.devTenant, gw.url);
}
