// The admin CLI run the way an operator runs it (`npm run admin -- …`), pointed at a stack's
// admin listener; answers its --json output.
import { execFile } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { Stack } from "./stack.ts";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");

export async function adminCli(stack: Stack, ...args: string[]): Promise<any> {
  const { stdout } = await promisify(execFile)("npx", ["tsx", "scripts/admin.ts", ...args, "--json"], {
    cwd: ROOT,
    env: { ...process.env, ADMIN_URL: stack.gateway.adminUrl, ADMIN_TOKEN: stack.gateway.adminToken, LOG_LEVEL: "silent" },
    timeout: 60_000,
  });
  return JSON.parse(stdout);
}
