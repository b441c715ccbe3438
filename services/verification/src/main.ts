import { createLogger, loadConfig, onShutdown, startObservability } from "@icv/platform";
import { startVerificationService } from "./start.ts";

const config = loadConfig();
const logger = createLogger({ level: config.LOG_LEVEL });
const observability = await startObservability(config, logger, "icv-verification", { metricsServer: true });
const svc = await startVerificationService(config, logger);
onShutdown(async () => {
  await svc.close();
  await observability();
}, logger);
