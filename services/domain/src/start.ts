import { hostService, type Config, type Logger, type RunningService } from "@icv/platform";
import { domainCallers } from "./callers.ts";

/** Starts the domain service. For now it hosts only its gRPC health endpoint; its RPCs arrive with their issue. */
export function startDomainService(config: Config, logger: Logger): Promise<RunningService> {
  return hostService(config, "domain", { rpcName: "icv.domain.v1.DomainService", logger: logger.child({ service: "domain" }), callers: domainCallers, routes: () => undefined });
}
