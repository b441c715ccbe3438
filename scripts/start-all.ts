// `npm start`: every service in one process, each on its own loopback port, and the gateway on PORT.
import { createLogger, loadConfig, onShutdown, startObservability, type RunningService } from "@icv/platform";
import { startProofService } from "../services/proof/src/start.ts";
import { startVerificationService } from "../services/verification/src/start.ts";
import { startSessionService } from "../services/session/src/start.ts";
import { startDomainService } from "../services/domain/src/start.ts";
import { startWebhookService } from "../services/webhook/src/start.ts";
import { startGateway } from "../services/gateway/src/start.ts";
import { printDevTenant } from "../services/gateway/src/print.ts";

const started = Date.now();
const config = loadConfig();
const logger = createLogger({ level: config.LOG_LEVEL });
const running: RunningService[] = [];
// metrics of every service here on the admin listener (GET /metrics); traces when OTLP is configured
const observability = await startObservability(config, logger, "icv", { metricsServer: false });
onShutdown(async () => {
  // the gateway first (no new requests), then the services it calls
  for (const s of running.reverse()) await s.close();
  await observability();
}, logger);

// services that call nobody first, then their callers
running.push(...(await Promise.all([startProofService(config, logger), startDomainService(config, logger), startWebhookService(config, logger)])));
running.push(await startVerificationService(config, logger));
running.push(await startSessionService(config, logger));
const gw = await startGateway(config, logger);
running.push(gw);
logger.info({ url: gw.url, ms: Date.now() - started }, "ICV is up");
if (gw.devTenant) printDevTenant(gw.devTenant, gw.url);
