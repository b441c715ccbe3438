// The embedded TLS directory made by processes starting at the same moment on one data dir (a
// split deployment's first start, each service its own process): one CA for all of them, and
// every certificate signed by it and matching its key. Several CAs made at once left services
// that could not reach each other (the gateway saw every service down).
import { X509Certificate, createPrivateKey } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { INTERNAL_NAMES, tlsDirFiles } from "../src/index.ts";
import { startAtOnce } from "./support/at-once.ts";

const root = path.resolve(import.meta.dirname, "../../..");
const work = mkdtempSync(path.join(tmpdir(), "icv-tls-race-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

// each child prepares the directory (its argument) and prints its log
const child = `
import { createLogger, ensureTlsDir } from ${JSON.stringify(path.join(root, "packages/platform/src/index.ts"))};
const [dir] = process.argv.slice(-2);
await ensureTlsDir(dir, createLogger({ level: "warn" }));
console.log("done");
`;

describe("the embedded TLS directory, prepared by processes at once", () => {
  it("gets one CA, and every certificate is signed by it and matches its key", async () => {
    const dir = path.join(work, "tls");
    const run = await startAtOnce(4, child, [dir]);
    const codes = await run.exited;
    const outs = run.outs();
    expect(codes, outs.join("\n")).toEqual([0, 0, 0, 0]);
    // one of them made the CA; the others took it
    expect(outs.join("").match(/generated an internal CA/g)).toHaveLength(1);
    const ca = new X509Certificate(readFileSync(path.join(dir, "ca.crt")));
    expect(ca.checkPrivateKey(createPrivateKey(readFileSync(path.join(dir, "ca.key"))))).toBe(true);
    for (const name of INTERNAL_NAMES) {
      const files = tlsDirFiles(dir, name);
      const cert = new X509Certificate(readFileSync(files.cert));
      expect(cert.verify(ca.publicKey), name).toBe(true);
      expect(cert.checkPrivateKey(createPrivateKey(readFileSync(files.key))), name).toBe(true);
    }
  }, 60_000);
});
