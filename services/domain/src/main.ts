import { createLogger, loadConfig, onShutdown } from "@icv/platform";
import { startDomainService } from "./start.ts";

const config = loadConfig();
const logger = createLogger({ level: config.LOG_LEVEL });
const svc = await startDomainService(config, logger);
onShutdown(() => svc.close(), logger);
