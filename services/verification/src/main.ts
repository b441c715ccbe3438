// The verification service alone in its process (one Deployment per service); `npm start` hosts every service in one.
import { runAlone } from "@icv/platform";
import { startVerificationService } from "./start.ts";

await runAlone("verification", ["proof", "domain", "log"], startVerificationService);
