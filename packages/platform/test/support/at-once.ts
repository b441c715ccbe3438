// Processes that must race: `count` node processes run `script` (an inline ES module, through
// tsx, from the repository root) with `args`, all beginning at the same moment. Each says it is
// ready and waits for a go file; the go file is written once every one is ready.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "../../../..");

// the go file is the last argument
const gate = `
import { existsSync as goFileExists } from "node:fs";
console.log("ready");
while (!goFileExists(process.argv.at(-1))) await new Promise((r) => setTimeout(r, 2));
`;

/** Starts them and lets them go; `exited` gives their exit codes, `outs` what each printed (stdout and stderr). */
export async function startAtOnce(count: number, script: string, args: string[]): Promise<{ exited: Promise<(number | null)[]>; outs: () => string[] }> {
  const gateDir = mkdtempSync(path.join(tmpdir(), "icv-at-once-"));
  const go = path.join(gateDir, "go");
  const children = Array.from({ length: count }, () => {
    const p = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", gate + script, ...args, go], {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    p.stdout!.on("data", (b: Buffer) => (out += b.toString()));
    p.stderr!.on("data", (b: Buffer) => (out += b.toString()));
    const ready = new Promise<void>((resolve) => p.stdout!.on("data", () => out.includes("ready") && resolve()));
    const exited = new Promise<number | null>((resolve) => p.on("exit", resolve));
    return { ready, exited, out: () => out };
  });
  await Promise.all(children.map((c) => c.ready));
  writeFileSync(go, "");
  const exited = Promise.all(children.map((c) => c.exited)).finally(() => rmSync(gateDir, { recursive: true, force: true }));
  return { exited, outs: () => children.map((c) => c.out()) };
}
