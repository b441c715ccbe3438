import path from "node:path";
import { fileURLToPath } from "node:url";
import { openServiceDatabase, startServiceHost, systemClock, type Clock, type Config, type Logger, type RunningService } from "@icv/platform";
import { webhookRoutes } from "./service.ts";
import { WebhookStore } from "./store.ts";

const MIGRATIONS = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "migrations");

/** Starts the webhook service. It issues the tenants' signing secrets; deliveries arrive with the events issue. */
export async function startWebhookService(config: Config, logger: Logger, clock: Clock = systemClock): Promise<RunningService> {
  const log = logger.child({ service: "webhook" });
  const db = await openServiceDatabase(config, "webhook", MIGRATIONS, log);
  const host = await startServiceHost({
    name: "icv.webhook.v1.WebhookService",
    host: config.GRPC_HOST,
    port: config.servicePort("webhook"),
    logger: log,
    routes: webhookRoutes(new WebhookStore(db), clock),
    ready: async () => (await db.query("SELECT 1")).rowCount === 1,
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
  });
  return {
    url: host.url,
    async close() {
      await host.close();
      await db.close();
    },
  };
}
