import { createLogger, loadConfig, onShutdown } from "@icv/platform";
import { startVerificationService } from "./start.ts";

const config = loadConfig();
const logger = createLogger({ level: config.LOG_LEVEL });
const svc = await startVerificationService(config, logger);
onShutdown(() => svc.close(), logger);
