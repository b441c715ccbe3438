import { startServiceHost, type Config, type Logger, type RunningService } from "@icv/platform";

/** Starts the session service. For now it hosts only its gRPC health endpoint; its RPCs arrive with their issue. */
export async function startSessionService(config: Config, logger: Logger): Promise<RunningService> {
  const log = logger.child({ service: "session" });
  const host = await startServiceHost({
    name: "icv.session.v1.SessionService",
    host: config.GRPC_HOST,
    port: config.servicePort("session"),
    logger: log,
    routes: () => undefined,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
  });
  return host;
}
