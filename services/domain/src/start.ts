import { startServiceHost, type Config, type Logger, type RunningService } from "@icv/platform";

/** Starts the domain service. For now it hosts only its gRPC health endpoint; its RPCs arrive with their issue. */
export async function startDomainService(config: Config, logger: Logger): Promise<RunningService> {
  const log = logger.child({ service: "domain" });
  const host = await startServiceHost({
    name: "icv.domain.v1.DomainService",
    host: config.GRPC_HOST,
    port: config.servicePort("domain"),
    logger: log,
    routes: () => undefined,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
  });
  return host;
}
