// writeAtomic: a file written by several processes at once (the admin CLI's certificates issued
// at the same moment into one directory all write its ca.crt) is never read in part. A plain
// writeFileSync truncates the file first: a reader between the truncation and the write got an
// empty CA, and a client's TLS then refused the services ("self-signed certificate in
// certificate chain").
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../../..");
const work = mkdtempSync(path.join(tmpdir(), "icv-write-atomic-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

// each writer waits for the go file, then writes the same 1 MB to `file` 100 times
const writer = `
import { existsSync } from "node:fs";
import { writeAtomic } from ${JSON.stringify(path.join(root, "packages/platform/src/tls.ts"))};
const [file, go] = process.argv.slice(-2);
console.log("ready");
while (!existsSync(go)) await new Promise((r) => setTimeout(r, 2));
const data = "x".repeat(1 << 20);
for (let i = 0; i < 100; i++) writeAtomic(file, data, 0o640);
`;

describe("writeAtomic", () => {
  it("lets no reader see part of a file that several processes write at once, and leaves no temporary file", async () => {
    const file = path.join(work, "ca.crt");
    const go = path.join(work, "go");
    const writers = Array.from({ length: 3 }, () => {
      const p = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", writer, file, go], {
        cwd: root,
        stdio: ["ignore", "pipe", "inherit"],
      });
      const ready = new Promise<void>((resolve) => p.stdout!.on("data", () => resolve()));
      const exited = new Promise<number | null>((resolve) => p.on("exit", resolve));
      return { ready, exited };
    });
    await Promise.all(writers.map((w) => w.ready));
    let done = false;
    const all = Promise.all(writers.map((w) => w.exited)).then((codes) => {
      done = true;
      return codes;
    });
    writeFileSync(go, "");
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
    expect(await all).toEqual([0, 0, 0]);
    expect([...sizes.keys()]).toEqual([1 << 20]); // every read saw the whole file
    expect(statSync(file).mode & 0o777).toBe(0o640);
    expect(readFileSync(file, "utf8")).toHaveLength(1 << 20);
    expect(readdirSync(work).sort()).toEqual(["ca.crt", "go"]); // no temporary file left
  });
});
