import { createLogger, loadConfig, onShutdown, startObservability } from "@icv/platform";
import { startSessionService } from "./start.ts";

const config = loadConfig();
const logger = createLogger({ level: config.LOG_LEVEL });
const observability = await startObservability(config, logger, "icv-session", { metricsServer: true });
const svc = await startSessionService(config, logger);
onShutdown(async () => {
  await svc.close();
  await observability();
}, logger);
