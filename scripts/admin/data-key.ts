// `admin data-key rotate` (docs/privacy.md): a new DATA_ENCRYPTION_KEY version that seals from the
// next start on; the older versions stay in the key to open rows until the background pass has
// re-sealed them (a start that meets a row of a version the key lacks refuses, naming it).
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { parseDataKeys, writeAtomic, type Config } from "@icv/platform";

type Print = (json: unknown, text: string) => void;

/** The key with a new version first: `next:new,v:old,…`. */
export function withNewVersion(current: string): { value: string; version: number } {
  const keys = parseDataKeys(current);
  const version = Math.max(...keys.keys()) + 1;
  const entries = [`${version}:${randomBytes(32).toString("base64")}`, ...[...keys].map(([v, k]) => `${v}:${k.toString("base64")}`)];
  return { value: entries.join(","), version };
}

export function rotateDataKey(config: Config, print: Print, fail: (msg: string) => never): void {
  if (config.DATA_ENCRYPTION_KEY) {
    const next = withNewVersion(config.DATA_ENCRYPTION_KEY);
    return print(
      { key_version: next.version, data_encryption_key: next.value },
      `set on every replica, then restart them (the services re-seal every row under key version ${next.version} in the background):\n` +
        `DATA_ENCRYPTION_KEY=${next.value}`,
    );
  }
  const file = path.join(config.DATA_DIR, "secrets", "data-key");
  if (!existsSync(file)) fail(`no data key in ${file} and DATA_ENCRYPTION_KEY is not set: start the service once first`);
  const next = withNewVersion(readFileSync(file, "utf8").trim());
  writeAtomic(file, next.value, 0o600);
  print(
    { key_version: next.version, file },
    `key version ${next.version} written to ${file}; restart the service: it seals new data with it and re-seals every row in the background`,
  );
}
