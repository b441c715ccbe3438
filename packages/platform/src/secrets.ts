import { randomBytes } from "node:crypto";
import { existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { Logger } from "./logger.ts";

/**
 * A secret for the embedded default: read from `<dataDir>/secrets/<name>`, generated there
 * (mode 0600) on first use. Production sets the matching environment variable instead; the
 * warning says which. Processes starting together (`npm start`'s workers) agree on one value:
 * each writes its own temp file and links it into place; the first link wins, the others read it.
 */
export function dataDirSecret(dataDir: string, name: string, envName: string, logger: Logger, bytes = 32): string {
  const dir = path.join(dataDir, "secrets");
  const file = path.join(dir, name);
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const value = randomBytes(bytes).toString("base64");
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, value, { mode: 0o600 });
  try {
    linkSync(tmp, file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    return readFileSync(file, "utf8").trim();
  } finally {
    rmSync(tmp, { force: true });
  }
  logger.warn({ file }, `${envName} is not set; generated one into the data dir (set ${envName} in production)`);
  return value;
}
