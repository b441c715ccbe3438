// writeAtomic: a file written by several processes at once (the admin CLI's certificates issued
// at the same moment into one directory all write its ca.crt) is never read in part. A plain
// writeFileSync truncates the file first: a reader between the truncation and the write got an
// empty CA, and a client's TLS then refused the services ("self-signed certificate in
// certificate chain").
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startAtOnce } from "./support/at-once.ts";

const root = path.resolve(import.meta.dirname, "../../..");
const work = mkdtempSync(path.join(tmpdir(), "icv-write-atomic-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

// each writer writes the same 1 MB to `file` (its argument) 100 times
const writer = `
import { writeAtomic } from ${JSON.stringify(path.join(root, "packages/platform/src/tls.ts"))};
const [file] = process.argv.slice(-2);
const data = "x".repeat(1 << 20);
for (let i = 0; i < 100; i++) writeAtomic(file, data, 0o640);
`;

describe("writeAtomic", () => {
  it("lets no reader see part of a file that several processes write at once, and leaves no temporary file", async () => {
    const file = path.join(work, "ca.crt");
    let done = false;
    const run = await startAtOnce(3, writer, [file]);
    const all = run.exited.then((codes) => {
      done = true;
      return codes;
    });
    const sizes = new Map<number, number>();
    while (!done) {
      if (existsSync(file)) {
        try {
          const n = readFileSync(file).length;
          sizes.set(n, (sizes.get(n) ?? 0) + 1);
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
        }
      }
      await new Promise((r) => setImmediate(r));
    }
    expect(await all, run.outs().join("\n")).toEqual([0, 0, 0]);
    expect([...sizes.keys()]).toEqual([1 << 20]); // every read saw the whole file
    expect(statSync(file).mode & 0o777).toBe(0o640);
    expect(readFileSync(file, "utf8")).toHaveLength(1 << 20);
    expect(readdirSync(work)).toEqual(["ca.crt"]); // no temporary file left
  });
});
