import { createLogger, loadConfig, onShutdown } from "@icv/platform";
import { startGateway } from "./start.ts";
import { printDevTenant } from "./print.ts";

const config = loadConfig();
const logger = createLogger({ level: config.LOG_LEVEL });
const gw = await startGateway(config, logger);
if (gw.devTenant) printDevTenant(gw.devTenant, gw.url);
onShutdown(() => gw.close(), logger);
