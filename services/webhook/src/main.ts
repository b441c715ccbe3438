// The webhook service alone in its process (one Deployment per service); `npm start` hosts every service in one.
import { runAlone } from "@icv/platform";
import { startWebhookService } from "./start.ts";

await runAlone("webhook", [], startWebhookService);
