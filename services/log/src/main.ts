// The log service alone in its process (one Deployment per service); `npm start` hosts every service in one.
import { runAlone } from "@icv/platform";
import { startLogService } from "./start.ts";

await runAlone("log", [], startLogService);
