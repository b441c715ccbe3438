import { createLogger, loadConfig, onShutdown } from "@icv/platform";
import { startSessionService } from "./start.ts";

const config = loadConfig();
const logger = createLogger({ level: config.LOG_LEVEL });
const svc = await startSessionService(config, logger);
onShutdown(() => svc.close(), logger);
