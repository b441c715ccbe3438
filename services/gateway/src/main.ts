import { createLogger, loadConfig, onShutdown, startObservability } from "@icv/platform";
import { startGateway } from "./start.ts";
import { printDevTenant } from "./print.ts";

const config = loadConfig();
const logger = createLogger({ level: config.LOG_LEVEL });
const observability = await startObservability(config, logger, "icv-gateway", { metricsServer: true });
const gw = await startGateway(config, logger);
if (gw.devTenant) printDevTenant(gw.devTenant, gw.url);
onShutdown(async () => {
  await gw.close();
  await observability();
}, logger);
