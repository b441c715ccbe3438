// The tree tells the story (ARCHITECTURE.md, Layout): no import cycle in the services and
// packages, no source file of a service over 400 lines, no index.ts with logic in a service, and
// the verification service's channels/ folder holds the Channel interface, the registry and one
// folder per asset type with one file per channel, with the channel files never reaching back into
// the registry.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { CHANNELS_BY_TYPE } from "../packages/platform/src/vocabulary.ts";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const rel = (p: string) => path.relative(ROOT, p);

function tsFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === "gen" || e.name === "node_modules" ? [] : tsFiles(p);
    return p.endsWith(".ts") || p.endsWith(".tsx") ? [p] : [];
  });
}

const SOURCE_DIRS = ["services", "packages"].flatMap((base) =>
  fs
    .readdirSync(path.join(ROOT, base))
    .map((name) => path.join(ROOT, base, name, "src"))
    .filter((d) => fs.existsSync(d)),
);
const PACKAGES: Record<string, string> = { "@icv/platform": path.join(ROOT, "packages/platform/src/index.ts") };

/** The files a source file imports statically (type imports included): relative paths and our own packages. */
function importsOf(file: string): string[] {
  const text = fs.readFileSync(file, "utf8");
  const specs = [...text.matchAll(/^\s*(?:import|export)\b[^'"`;]*?\bfrom\s+["']([^"']+)["']|^\s*import\s+["']([^"']+)["']/gm)].map((m) => m[1] ?? m[2]);
  return specs.flatMap((spec) => {
    if (PACKAGES[spec]) return [PACKAGES[spec]];
    if (spec.startsWith("@icv/platform/")) return [path.join(ROOT, "packages/platform/src", spec.slice("@icv/platform/".length))];
    return spec.startsWith(".") ? [path.resolve(path.dirname(file), spec)] : [];
  });
}

/** Every cycle a depth-first walk meets, as the list of files around it. */
function cyclesOf(graph: Map<string, string[]>): string[][] {
  const state = new Map<string, "open" | "done">();
  const trail: string[] = [];
  const found: string[][] = [];
  const visit = (node: string) => {
    state.set(node, "open");
    trail.push(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (state.get(next) === "open") found.push([...trail.slice(trail.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    trail.pop();
    state.set(node, "done");
  };
  for (const node of graph.keys()) if (!state.has(node)) visit(node);
  return found;
}

/** Whether a file holds nothing but re-exports (`export … from`), comments aside. */
function onlyReExports(text: string): boolean {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
  return code
    .split(";")
    .map((st) => st.trim())
    .filter(Boolean)
    .every((st) => /^export\s+(type\s+)?(\*(\s+as\s+\w+)?|\{[^}]*\})\s+from\s+["'][^"']+["']$/.test(st));
}

describe("the tree", () => {
  const files = SOURCE_DIRS.flatMap(tsFiles);
  const graph = new Map(files.map((f) => [f, importsOf(f)]));

  it("finds a cycle when there is one (the check itself)", () => {
    const g = new Map([
      ["a", ["b"]],
      ["b", ["c"]],
      ["c", ["a"]],
      ["d", ["a"]],
    ]);
    expect(cyclesOf(g)).toEqual([["a", "b", "c", "a"]]);
    expect(
      cyclesOf(
        new Map([
          ["a", ["b"]],
          ["b", []],
        ]),
      ),
    ).toEqual([]);
  });

  it("has no import cycle in services/*/src and packages/*/src", () => {
    expect(files.length).toBeGreaterThan(100);
    // every relative import resolves to a file we read (else the walk would miss edges)
    const unresolved = [...graph.entries()].flatMap(([f, deps]) => deps.filter((d) => !graph.has(d)).map((d) => `${rel(f)} → ${rel(d)}`));
    expect(unresolved).toEqual([]);
    expect(cyclesOf(graph).map((c) => c.map(rel).join(" → "))).toEqual([]);
  });

  // Files other helpers of issue 25 are moving (H1: channels/, H3: the verification use cases);
  // each entry fails the test once it is no longer needed, so the lists only shrink. Empty after the merge.
  const MOVING_LONG = new Set(["services/verification/src/requests/index.ts", "services/verification/src/store/requests.ts"]);
  const MOVING_INDEX = new Set([
    "services/verification/src/profiles/index.ts",
    "services/verification/src/projects/index.ts",
    "services/verification/src/requests/index.ts",
    "services/verification/src/verifications/index.ts",
  ]);
  const serviceFiles = SOURCE_DIRS.filter((d) => rel(d).startsWith("services/")).flatMap(tsFiles);

  it("has no source file of a service over 400 lines", () => {
    // and the console's browser app (packages/console, TSX)
    const services = SOURCE_DIRS.filter((d) => rel(d).startsWith("services/") || rel(d) === "packages/console/src");
    const long = services
      .flatMap(tsFiles)
      .map((f) => ({ file: rel(f), lines: fs.readFileSync(f, "utf8").split("\n").length - 1 }))
      .filter((x) => x.lines > 400);
    expect(long.filter((x) => !MOVING_LONG.has(x.file))).toEqual([]);
    expect([...MOVING_LONG].filter((f) => !long.some((x) => x.file === f))).toEqual([]);
  });

  it("has no index.ts with logic in services/*/src: only re-exports, or none (a file's name says what it holds)", () => {
    const indexes = serviceFiles.filter((f) => path.basename(f) === "index.ts");
    const withLogic = indexes.filter((f) => !onlyReExports(fs.readFileSync(f, "utf8"))).map(rel);
    expect(withLogic.filter((f) => !MOVING_INDEX.has(f))).toEqual([]);
    expect([...MOVING_INDEX].filter((f) => !withLogic.includes(f))).toEqual([]);
  });

  it("tells a re-export from logic (the check itself)", () => {
    expect(onlyReExports('/** doc */\nexport * from "./a.ts";\nexport { b, type C } from "./b.ts";\nexport type { D } from "./d.ts";\n')).toBe(true);
    expect(onlyReExports("")).toBe(true);
    expect(onlyReExports('export { b } from "./b.ts";\nexport const x = 1;\n')).toBe(false);
    expect(onlyReExports('import { b } from "./b.ts";\nexport function f() {\n  return b;\n}\n')).toBe(false);
  });
});

describe("services/verification/src/channels", () => {
  const dir = path.join(ROOT, "services/verification/src/channels");
  const entries = fs.readdirSync(dir, { withFileTypes: true });

  it("holds channel.ts, registry.ts, shared/ and one folder per asset type (no index.ts)", () => {
    const files = entries.filter((e) => e.isFile()).map((e) => e.name);
    expect(files.sort()).toEqual(["channel.ts", "registry.ts"]);
    const folders = entries.filter((e) => e.isDirectory()).map((e) => e.name);
    expect(folders.sort()).toEqual([...Object.keys(CHANNELS_BY_TYPE), "shared"].sort());
    expect(
      tsFiles(dir)
        .filter((f) => path.basename(f) === "index.ts")
        .map(rel),
    ).toEqual([]);
  });

  it("has one file per channel of the type/channel table in its type's folder (helpers beside them)", () => {
    const missing = Object.entries(CHANNELS_BY_TYPE).flatMap(([type, channels]) =>
      channels.map((c) => `${type}/${c}.ts`).filter((f) => !fs.existsSync(path.join(dir, f))),
    );
    expect(missing).toEqual([]);
  });

  it("registry.ts imports each channel file, and no other file of channels/ imports the registry", () => {
    const registry = path.join(dir, "registry.ts");
    const channelFiles = Object.entries(CHANNELS_BY_TYPE).flatMap(([type, channels]) => channels.map((c) => path.join(dir, type, `${c}.ts`)));
    const imported = new Set(importsOf(registry));
    expect(channelFiles.filter((f) => !imported.has(f)).map(rel)).toEqual([]);
    const offenders = tsFiles(dir)
      .filter((f) => f !== registry && importsOf(f).includes(registry))
      .map(rel);
    expect(offenders).toEqual([]);
  });

  it("a type's folder imports channel.ts, shared/ and its own helpers only (never another type's folder)", () => {
    const crossing = Object.keys(CHANNELS_BY_TYPE).flatMap((type) =>
      tsFiles(path.join(dir, type)).flatMap((f) =>
        importsOf(f)
          .filter((d) => d.startsWith(dir + path.sep))
          .filter(
            (d) => !d.startsWith(path.join(dir, type) + path.sep) && !d.startsWith(path.join(dir, "shared") + path.sep) && d !== path.join(dir, "channel.ts"),
          )
          .map((d) => `${rel(f)} → ${rel(d)}`),
      ),
    );
    expect(crossing).toEqual([]);
  });

  it("channel files import only channel.ts, shared/ and the helpers of channels/ (never the service above them)", () => {
    const outside = tsFiles(dir).flatMap((f) =>
      importsOf(f)
        .filter((d) => d.startsWith(ROOT) && !d.startsWith(dir + path.sep) && !d.startsWith(path.join(ROOT, "packages")))
        .map((d) => `${rel(f)} → ${rel(d)}`),
    );
    expect(outside).toEqual([]);
  });
});
