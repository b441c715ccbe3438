// The project brings its own Node: the npm package `node` (a devDependency) puts its binary in
// node_modules/.bin, which npm puts first on the PATH of every `npm run` and `npm exec`. So
// `npm install && npm start` and `npm test` work on any machine with npm, whatever its Node, and
// the install prints no EBADENGINE line on the oldest Node the root `engines` admits.
import { execFileSync } from "node:child_process";
import { readFileSync, realpathSync } from "node:fs";
import path from "node:path";
import semver from "semver";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "..");
const json = (file: string) => JSON.parse(readFileSync(path.join(ROOT, file), "utf8"));
const own = json("node_modules/node/package.json") as { version: string };
const inProject = (p: string) => realpathSync(p).startsWith(path.join(realpathSync(ROOT), "node_modules") + path.sep);

/** The machine's own Node: the first `node` on PATH outside this project's node_modules. */
function machineNode(): string | undefined {
  const dirs = (process.env.PATH ?? "").split(path.delimiter).filter((d) => d && !d.includes(`${path.sep}node_modules${path.sep}`));
  for (const dir of dirs) {
    try {
      const bin = path.join(dir, "node");
      execFileSync(bin, ["--version"], { stdio: "pipe" });
      if (!inProject(bin)) return bin;
    } catch {
      // no node here
    }
  }
  return undefined;
}

describe("the project's own Node", () => {
  it("runs this suite (npm test), as it runs every npm script", () => {
    expect(process.version).toBe(`v${own.version}`);
    expect(inProject(process.execPath)).toBe(true);
  });

  const machine = machineNode();
  it.skipIf(!machine)("is what npm exec finds first when only the machine's Node is on PATH (npm start: test/docs-run.test.ts)", () => {
    // PATH as a fresh shell has it: the machine's Node and the system's tools, nothing of this project
    const env: NodeJS.ProcessEnv = { ...process.env, PATH: [path.dirname(machine!), "/usr/bin", "/bin"].join(path.delimiter) };
    for (const k of Object.keys(env)) if (k.startsWith("npm_")) delete env[k];
    const node = (args: string[]) => execFileSync(args[0], args.slice(1), { cwd: ROOT, env, encoding: "utf8" }).trim();
    expect(node(["node", "-p", "process.execPath"])).toBe(realpathSync(machine!));
    expect(node(["npm", "exec", "--offline", "--", "node", "-p", "process.execPath"])).toSatisfy(inProject);
  });

  it("leaves no package whose engines the oldest admitted Node fails (npm install prints no EBADENGINE)", () => {
    const lock = json("package-lock.json") as { packages: Record<string, { engines?: { node?: string }; optional?: boolean }> };
    const oldest = semver.minVersion(lock.packages[""].engines!.node!)!;
    expect(oldest.major).toBeLessThanOrEqual(20); // the machine's Node may be old: ours runs the code
    const refused = Object.entries(lock.packages)
      .filter(([, p]) => !p.optional && p.engines?.node && !semver.satisfies(oldest, p.engines.node))
      .map(([name, p]) => `${name || "(root)"} wants node ${p.engines!.node}`);
    expect(refused).toEqual([]);
  });
});
