import { hostService, type Config, type Logger, type RunningService } from "@icv/platform";

/** Starts the session service. For now it hosts only its gRPC health endpoint; its RPCs arrive with their issue. */
export function startSessionService(config: Config, logger: Logger): Promise<RunningService> {
  return hostService(config, "session", { rpcName: "icv.session.v1.SessionService", logger: logger.child({ service: "session" }), routes: () => undefined });
}
