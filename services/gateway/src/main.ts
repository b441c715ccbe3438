// The gateway alone in its process (one Deployment per service); `npm start` hosts every service in one.
import { runAlone } from "@icv/platform";
import { startGateway } from "./start.ts";
import { printDevTenant } from "./print.ts";

await runAlone("gateway", ["verification", "proof", "session", "domain", "webhook", "log"], async (config, logger) => {
  const gw = await startGateway(config, logger);
  if (gw.devTenant) printDevTenant(gw.devTenant, gw.url);
  return gw;
});
