// The embedded TLS directory made by processes starting at the same moment on one data dir (a
// split deployment's first start, each service its own process): one CA for all of them, and
// every certificate signed by it and matching its key. Several CAs made at once left services
// that could not reach each other (the gateway saw every service down).
import { spawn } from "node:child_process";
import { X509Certificate, createPrivateKey } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { INTERNAL_NAMES, tlsDirFiles } from "../src/index.ts";

const root = path.resolve(import.meta.dirname, "../../..");
const work = mkdtempSync(path.join(tmpdir(), "icv-tls-race-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

// each child says it is ready, waits for the go file, prepares the directory, and prints its log
const child = `
import { existsSync } from "node:fs";
import { createLogger, ensureTlsDir } from ${JSON.stringify(path.join(root, "packages/platform/src/index.ts"))};
const [dir, go] = process.argv.slice(-2);
console.log("ready");
while (!existsSync(go)) await new Promise((r) => setTimeout(r, 2));
await ensureTlsDir(dir, createLogger({ level: "warn" }));
console.log("done");
`;

function start(dir: string, go: string) {
  const p = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", child, dir, go], {
    cwd: root,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  p.stdout!.on("data", (b: Buffer) => (out += b.toString()));
  p.stderr!.on("data", (b: Buffer) => (out += b.toString()));
  const ready = new Promise<void>((resolve) => p.stdout!.on("data", () => out.includes("ready") && resolve()));
  const exited = new Promise<number | null>((resolve) => p.on("exit", resolve));
  return { ready, exited, out: () => out };
}

describe("the embedded TLS directory, prepared by processes at once", () => {
  it("gets one CA, and every certificate is signed by it and matches its key", async () => {
    const dir = path.join(work, "tls");
    const go = path.join(work, "go");
    const children = Array.from({ length: 4 }, () => start(dir, go));
    await Promise.all(children.map((c) => c.ready));
    writeFileSync(go, "");
    const codes = await Promise.all(children.map((c) => c.exited));
    const outs = children.map((c) => c.out());
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
