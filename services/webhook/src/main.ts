import { createLogger, loadConfig, onShutdown, startObservability } from "@icv/platform";
import { startWebhookService } from "./start.ts";

const config = loadConfig();
const logger = createLogger({ level: config.LOG_LEVEL });
const observability = await startObservability(config, logger, "icv-webhook", { metricsServer: true });
const svc = await startWebhookService(config, logger);
onShutdown(async () => {
  await svc.close();
  await observability();
}, logger);
