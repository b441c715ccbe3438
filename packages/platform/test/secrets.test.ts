// The data dir's generated secrets when several processes start at once (`npm start`'s workers):
// every process gets the same value, the file is private, and no temp file is left behind.
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

const dir = mkdtempSync(path.join(tmpdir(), "icv-secrets-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const NAMES = 200;
// each process waits for the same moment, then makes (or reads) the same secrets in the same order
const SCRIPT = `
import { dataDirSecret } from "./packages/platform/src/secrets.ts";
import { createLogger } from "./packages/platform/src/logger.ts";
const log = createLogger({ level: "silent" });
await new Promise((r) => setTimeout(r, Number(process.argv[2]) - Date.now()));
const values = [];
for (let i = 0; i < ${NAMES}; i++) values.push(dataDirSecret(process.argv[1], "race-" + i, "RACE_SECRET", log));
process.stdout.write(values.join(","));
`;

describe("dataDirSecret", () => {
  it("gives processes racing to create it one value", async () => {
    const at = Date.now() + 4_000;
    const run = () =>
      promisify(execFile)(process.execPath, ["--import", "tsx", "--input-type=module", "-e", SCRIPT, dir, String(at)], {
        cwd: path.resolve(import.meta.dirname, "../../.."),
      });
    const values = (await Promise.all(Array.from({ length: 4 }, run))).map((r) => r.stdout);
    expect(values[0].split(",")).toHaveLength(NAMES);
    expect(values[0].split(",")[0]).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    expect(new Set(values).size).toBe(1);
    expect(statSync(path.join(dir, "secrets", "race-0")).mode & 0o777).toBe(0o600);
    expect(readdirSync(path.join(dir, "secrets"))).toHaveLength(NAMES);
  }, 60_000);
});
