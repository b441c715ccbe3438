import { startServiceHost, type Config, type Logger, type RunningService } from "@icv/platform";

/** Starts the webhook service. For now it hosts only its gRPC health endpoint; its RPCs arrive with their issue. */
export async function startWebhookService(config: Config, logger: Logger): Promise<RunningService> {
  const log = logger.child({ service: "webhook" });
  const host = await startServiceHost({
    name: "icv.webhook.v1.WebhookService",
    host: config.GRPC_HOST,
    port: config.servicePort("webhook"),
    logger: log,
    routes: () => undefined,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
  });
  return host;
}
