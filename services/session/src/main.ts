// The session service alone in its process (one Deployment per service); `npm start` hosts every service in one.
import { runAlone } from "@icv/platform";
import { startSessionService } from "./start.ts";

await runAlone("session", ["verification"], startSessionService);
