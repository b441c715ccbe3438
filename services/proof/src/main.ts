import { createLogger, loadConfig, onShutdown } from "@icv/platform";
import { startProofService } from "./start.ts";

const config = loadConfig();
const logger = createLogger({ level: config.LOG_LEVEL });
const svc = await startProofService(config, logger);
onShutdown(() => svc.close(), logger);
