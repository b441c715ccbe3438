import { createLogger, loadConfig, onShutdown, startObservability } from "@icv/platform";
import { startDomainService } from "./start.ts";

const config = loadConfig();
const logger = createLogger({ level: config.LOG_LEVEL });
const observability = await startObservability(config, logger, "icv-domain", { metricsServer: true });
const svc = await startDomainService(config, logger);
onShutdown(async () => {
  await svc.close();
  await observability();
}, logger);
