import { createLogger, loadConfig, onShutdown } from "@icv/platform";
import { startWebhookService } from "./start.ts";

const config = loadConfig();
const logger = createLogger({ level: config.LOG_LEVEL });
const svc = await startWebhookService(config, logger);
onShutdown(() => svc.close(), logger);
