// The guides run as written. `npm start` starts the stack as the README says (on the machine's own
// Node: npm finds the project's), then every shell block of README.md, docs/*.md and
// deploy/k8s/README.md runs in bash, one session per guide, in order, in a directory of its own
// (the repository's files linked in, so `npm run admin` and `node verify-offline.mjs` work as
// from a checkout), after the walkthrough's first block (BASE, KEY, AUTH, JSON). A block whose
// next fence is its sample output (JSON, or JSON lines) must answer the same fields: a field the
// API added or dropped fails here. What a reader would type differently is replaced, and nothing
// else: `localhost:3000`/`127.0.0.1:3001` (this stack's ports), `pk_test_…`/`pk_live_…`/`ten_…` (the keys
// and tenant `npm start` printed). A block that needs what this machine lacks (another host, a cluster, a
// container engine, a provider) says so on the line before its fence
// (`<!-- docs-run: skip (why) -->`), and only then is it not run.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { shellBlocks, shellEnv, type ShellBlock } from "./support/doc-blocks.ts";
import { freePort } from "./support/private-servers.ts";

const ROOT = path.resolve(import.meta.dirname, "..");
const GUIDES = [
  "README.md",
  ...readdirSync(path.join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .sort()
    .map((f) => `docs/${f}`),
  "deploy/k8s/README.md",
].filter((f) => shellBlocks(f).length > 0);
const PRELUDE = shellBlocks("docs/walkthrough.md")[0];

const dir = mkdtempSync(path.join(tmpdir(), "icv-docs-run-"));
let stack: ChildProcess | undefined;
let output = "";
let env: Record<string, string> = {};
let keys = { test: "", live: "", tenant: "" };

/** docs/internal-clients.md's client file (its yaml block that starts `# internal-clients.yaml`), saved where npm start reads it. */
function clientsFile(): string {
  const md = readFileSync(path.join(ROOT, "docs/internal-clients.md"), "utf8");
  const file = path.join(dir, "internal-clients.yaml");
  writeFileSync(file, /^```yaml\n(# internal-clients\.yaml[\s\S]*?)^```/m.exec(md)![1]);
  return file;
}

beforeAll(async () => {
  const grpc: Record<string, string> = {};
  for (const n of ["VERIFICATION", "PROOF", "SESSION", "DOMAIN", "WEBHOOK"]) grpc[`${n}_GRPC_PORT`] = String(await freePort());
  env = shellEnv({
    ...grpc,
    PORT: String(await freePort()),
    ADMIN_PORT: String(await freePort()),
    DATA_DIR: path.join(dir, "data"),
    // the guides together make a few hundred requests with one key within a minute
    RATE_LIMIT_PER_MINUTE: "2000",
    // docs/internal-clients.md: its client file, as the guide starts npm start with it
    INTERNAL_CLIENTS_FILE: clientsFile(),
  });
  // its own process group: npm, its shell and the service stop together
  stack = spawn("npm", ["start"], { cwd: ROOT, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  stack.stdout!.on("data", (b: Buffer) => (output += b));
  stack.stderr!.on("data", (b: Buffer) => (output += b));
  const end = Date.now() + 150_000;
  // the development tenant, then "ICV is up" (printed once every part is ready; later on a busy machine)
  while (!/test key (pk_test_\S+)[\s\S]*live key (pk_live_\S+)/.test(output) || !output.includes('"msg":"ICV is up"')) {
    if (stack.exitCode !== null || Date.now() > end) throw new Error(`npm start did not print the development tenant and "ICV is up":\n${output}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const [, test, live] = /test key (pk_test_\S+)[\s\S]*live key (pk_live_\S+)/.exec(output)!;
  keys = { test, live, tenant: /tenant\s+(ten_\w+)/.exec(output)?.[1] ?? "" };
}, 180_000);

afterAll(async () => {
  if (stack?.pid && stack.exitCode === null) {
    const exited = new Promise((r) => stack!.once("exit", r));
    process.kill(-stack.pid, "SIGTERM");
    await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
    if (stack.exitCode === null) process.kill(-stack.pid, "SIGKILL");
  }
  rmSync(dir, { recursive: true, force: true });
}, 30_000);

/** What a reader types differently here: this stack's ports and keys. */
const localize = (code: string) =>
  code
    .replaceAll("localhost:3000", `127.0.0.1:${env.PORT}`)
    .replaceAll("127.0.0.1:3001", `127.0.0.1:${env.ADMIN_PORT}`)
    .replaceAll("pk_test_…", keys.test)
    .replaceAll("pk_live_…", keys.live)
    .replaceAll("ten_…", keys.tenant);

/** A directory like a checkout: every top-level entry of the repository linked in. */
function workDir(name: string): string {
  const work = path.join(dir, name.replaceAll("/", "_"));
  mkdirSync(work);
  for (const e of readdirSync(ROOT)) if (![".git", "data", "test-artifacts"].includes(e)) symlinkSync(path.join(ROOT, e), path.join(work, e));
  return work;
}

/** A guide's script files: a js block whose first line is `// node <file>` is saved as that file. */
function scripts(guide: string): [string, string][] {
  const md = readFileSync(path.join(ROOT, guide), "utf8");
  return [...md.matchAll(/^```(?:js|mjs|javascript)\n(\/\/ node (\S+\.m?js)[^\n]*\n[\s\S]*?)^```/gm)].map((m) => [m[2], m[1]]);
}

type Json = unknown;
/** The sample as JSON (one document) or JSON lines; undefined when it is neither. */
function parsed(text: string): { lines: boolean; values: Json[] } | undefined {
  try {
    return { lines: false, values: [JSON.parse(text)] };
  } catch {
    const lines = text.split("\n").filter((l) => l.trim());
    try {
      return lines.length ? { lines: true, values: lines.map((l) => JSON.parse(l)) } : undefined;
    } catch {
      return undefined;
    }
  }
}

/** Where `actual` has other fields than `sample` (recursively; values are not compared). */
function fieldDiff(sample: Json, actual: Json, at = "$"): string[] {
  const obj = (v: Json): v is Record<string, Json> => typeof v === "object" && v !== null && !Array.isArray(v);
  if (obj(sample) && obj(actual)) {
    const out: string[] = [];
    for (const k of Object.keys(sample)) if (!(k in actual)) out.push(`${at}.${k}: in the sample, not in the answer`);
    for (const k of Object.keys(actual)) if (!(k in sample)) out.push(`${at}.${k}: answered, missing from the sample`);
    for (const k of Object.keys(sample)) if (k in actual) out.push(...fieldDiff(sample[k], actual[k], `${at}.${k}`));
    return out;
  }
  // how many items a list holds depends on what ran before (other guides, the same tenant): their fields count
  if (Array.isArray(sample) && Array.isArray(actual)) return sample.slice(0, actual.length).flatMap((s, i) => fieldDiff(s, actual[i], `${at}[${i}]`));
  if (obj(sample) !== obj(actual) || Array.isArray(sample) !== Array.isArray(actual))
    return [`${at}: the sample has ${JSON.stringify(sample)?.slice(0, 60)}, the answer ${JSON.stringify(actual)?.slice(0, 60)}`];
  return [];
}

/** Runs a guide's blocks in one bash session; each block's output, or where and why it stopped. */
function runGuide(guide: string, blocks: ShellBlock[]): { outputs: string[]; failure?: string } {
  const work = workDir(guide);
  for (const [file, code] of scripts(guide)) writeFileSync(path.join(work, file), code);
  const io = path.join(work, ".docs-run");
  mkdirSync(io);
  writeFileSync(path.join(io, "prelude.sh"), localize(PRELUDE.code));
  const lines = ["set -euo pipefail", `source ${io}/prelude.sh > /dev/null`];
  blocks.forEach((b, i) => {
    writeFileSync(path.join(io, `${i}.sh`), localize(b.code));
    lines.push(`{ source ${io}/${i}.sh; } > ${io}/${i}.out 2> ${io}/${i}.err`, `: > ${io}/${i}.done`);
  });
  try {
    execFileSync("bash", ["-c", lines.join("\n")], { cwd: work, env, stdio: "pipe", timeout: 240_000 });
  } catch (e) {
    const i = blocks.findIndex((_, n) => !readdirSync(io).includes(`${n}.done`));
    const read = (f: string) => {
      try {
        return readFileSync(path.join(io, f), "utf8").slice(-2000);
      } catch {
        return "";
      }
    };
    return { outputs: [], failure: `${blocks[i]?.where ?? guide} failed (${(e as Error).message.split("\n")[0]}):\n${read(`${i}.err`)}\n${read(`${i}.out`)}` };
  }
  return { outputs: blocks.map((_, i) => readFileSync(path.join(io, `${i}.out`), "utf8")) };
}

describe("the guides' shell blocks, run as written against `npm start`", () => {
  it("npm start, on the machine's Node, runs the project's Node and warns of nothing", () => {
    expect(output).toMatch(/"node":"v24\.[\d.]+","msg":"ICV is up"/);
    expect(output).not.toMatch(/Warning|MaxListenersExceeded/);
  });

  it("every guide with shell blocks is run here", () => {
    expect(GUIDES).toEqual(expect.arrayContaining(["README.md", "docs/walkthrough.md", "docs/sessions.md", "docs/admin-cli.md", "docs/operations.md"]));
  });

  for (const guide of GUIDES) {
    const all = shellBlocks(guide);
    const run = all.filter((b) => !b.skip);
    const skipped = all.filter((b) => b.skip).map((b) => `${b.where} (${b.skip})`);
    it(`${guide}: ${run.length} blocks run${skipped.length ? `, ${skipped.length} not (${skipped.join("; ")})` : ""}`, { timeout: 300_000 }, () => {
      const { outputs, failure } = runGuide(guide, run);
      expect(failure).toBeUndefined();
      const diffs: string[] = [];
      for (const [i, b] of run.entries()) {
        const want = b.sample === undefined ? undefined : parsed(b.sample);
        if (!want) continue;
        const got = parsed(outputs[i]);
        if (!got) {
          diffs.push(`${b.where}: the sample is JSON, the answer is not: ${outputs[i].slice(0, 300)}`);
          continue;
        }
        if (want.values.length !== got.values.length) diffs.push(`${b.where}: ${want.values.length} documents in the sample, ${got.values.length} answered`);
        for (const [n, w] of want.values.entries()) diffs.push(...fieldDiff(w, got.values[n]).map((d) => `${b.where}: ${d}`));
      }
      expect(diffs).toEqual([]);
    });
  }
});
