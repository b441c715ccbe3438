// The verification service alone in its process (one Deployment per service); `npm start` hosts every service in one.
import { runAlone } from "@icv/platform";
import { CHANNEL_CONFIG } from "./channels/registry.ts";
import { startVerificationService } from "./start.ts";

// the channels' configuration keys (SMTP, OAuth apps, Kraken) are validated with the platform's
await runAlone("verification", ["proof", "domain", "log"], startVerificationService, CHANNEL_CONFIG);
