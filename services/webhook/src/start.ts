import path from "node:path";
import { fileURLToPath } from "node:url";
import { hostService, openServiceDatabase, systemClock, type Clock, type Config, type Logger, type RunningService } from "@icv/platform";
import { webhookRoutes } from "./service.ts";
import { WebhookStore } from "./store.ts";

const MIGRATIONS = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "migrations");

/** Starts the webhook service. It issues the tenants' signing secrets; deliveries arrive with the events issue. */
export async function startWebhookService(config: Config, logger: Logger, clock: Clock = systemClock): Promise<RunningService> {
  const log = logger.child({ service: "webhook" });
  const db = await openServiceDatabase(config, "webhook", MIGRATIONS, log);
  return hostService(config, "webhook", { rpcName: "icv.webhook.v1.WebhookService", logger: log, db, routes: webhookRoutes(new WebhookStore(db), clock) });
}
