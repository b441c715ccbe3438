import { createLogger, loadConfig, onShutdown, startObservability } from "@icv/platform";
import { startProofService } from "./start.ts";

const config = loadConfig();
const logger = createLogger({ level: config.LOG_LEVEL });
const observability = await startObservability(config, logger, "icv-proof", { metricsServer: true });
const svc = await startProofService(config, logger);
onShutdown(async () => {
  await svc.close();
  await observability();
}, logger);
