// The tree tells the story (ARCHITECTURE.md, Layout): no import cycle in the services and
// packages, between files or between the folders of one service's src; no import in the
// verification service from a lower layer to a higher one; no source file of a service over 400
// lines, no index.ts with logic in a service, and the verification service's channels/ folder
// holds the Channel interface, the registry and one folder per asset type with one file per
// channel, with the channel files never reaching back into the registry.
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

/** A file's unit in its service's src: the folder right under src/, or the file itself when it stands at the root. */
const unitOf = (src: string, file: string) => path.relative(src, file).split(path.sep)[0];

/** The units of one src and, for each arrow between two of them, the first file import that draws it ("a.ts → b.ts"). */
function unitGraph(src: string, graph: Map<string, string[]>): Map<string, Map<string, string>> {
  const units = new Map<string, Map<string, string>>();
  for (const [file, deps] of graph) {
    if (!file.startsWith(src + path.sep)) continue;
    const from = unitOf(src, file);
    const arrows = units.get(from) ?? new Map<string, string>();
    units.set(from, arrows);
    for (const d of deps) {
      if (!d.startsWith(src + path.sep)) continue;
      const to = unitOf(src, d);
      if (to !== from && !arrows.has(to)) arrows.set(to, `${path.relative(src, file)} → ${path.relative(src, d)}`);
    }
  }
  return units;
}

/** Folder-level cycles: each as its units in order, with the import that draws every arrow of it. */
function folderCycles(units: Map<string, Map<string, string>>): string[] {
  const g = new Map([...units].map(([u, arrows]) => [u, [...arrows.keys()]]));
  return cyclesOf(g).map((c) =>
    c
      .slice(0, -1)
      .map((u, i) => `${u} (${units.get(u)?.get(c[i + 1])})`)
      .join(" → "),
  );
}

/**
 * Imports that run up: `layers` lists the units of a src from the top floor down; a unit may
 * import its own floor and the floors below it. A unit on no floor is reported too, so a new
 * folder has to be given its place.
 */
function upwardArrows(units: Map<string, Map<string, string>>, layers: readonly (readonly string[])[]): string[] {
  const floor = new Map(layers.flatMap((names, i) => names.map((n) => [n, layers.length - i] as const)));
  const unplaced = [...units.keys()].filter((u) => !floor.has(u)).map((u) => `${u} has no floor`);
  const up = [...units].flatMap(([from, arrows]) =>
    [...arrows].filter(([to]) => floor.has(from) && floor.has(to) && floor.get(to)! > floor.get(from)!).map(([, example]) => `${from} ↑ ${example}`),
  );
  return [...unplaced, ...up];
}

/**
 * The floors of services/verification/src, top first (ARCHITECTURE.md, Habits): the composition,
 * the RPC handlers, the use cases, what they send with (sending/, the channels), the store. The
 * store imports only the store and the platform and contracts packages.
 */
const VERIFICATION_LAYERS = [
  ["main.ts", "start.ts"],
  ["rpc", "callers.ts"],
  ["verifications", "requests", "profiles", "projects", "oauth", "insights.ts", "proof-revocations.ts"],
  ["sending", "channels", "callback-url.ts"],
  ["store"],
] as const;

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

  it("finds a folder cycle and an upward arrow when there is one (the checks themselves)", () => {
    const src = path.join(ROOT, "x/src");
    const f = (p: string) => path.join(src, p);
    const g = new Map([
      [f("rpc/a.ts"), [f("uses/b.ts")]],
      [f("uses/b.ts"), [f("store/c.ts"), f("uses/d.ts")]],
      [f("store/c.ts"), [f("events.ts"), path.join(ROOT, "packages/platform/src/index.ts")]],
      [f("events.ts"), [f("store/e.ts")]],
      [f("store/e.ts"), []],
      [f("uses/d.ts"), [f("rpc/a.ts")]],
    ]);
    const units = unitGraph(src, g);
    expect(folderCycles(units).sort()).toEqual([
      "rpc (rpc/a.ts → uses/b.ts) → uses (uses/d.ts → rpc/a.ts)",
      "store (store/c.ts → events.ts) → events.ts (events.ts → store/e.ts)",
    ]);
    expect(upwardArrows(units, [["rpc"], ["uses"], ["store"]])).toEqual(["events.ts has no floor", "uses ↑ uses/d.ts → rpc/a.ts"]);
    expect(upwardArrows(units, [["rpc"], ["uses"], ["events.ts"], ["store"]])).toEqual(["uses ↑ uses/d.ts → rpc/a.ts", "store ↑ store/c.ts → events.ts"]);
    // a tree that runs one way only
    const clean = unitGraph(
      src,
      new Map([
        [f("rpc/a.ts"), [f("uses/b.ts")]],
        [f("uses/b.ts"), [f("store/c.ts")]],
        [f("store/c.ts"), []],
      ]),
    );
    expect(folderCycles(clean)).toEqual([]);
    expect(upwardArrows(clean, [["rpc"], ["uses"], ["store"]])).toEqual([]);
  });

  it("has no cycle between the folders of one service's src", () => {
    const cycles = SOURCE_DIRS.filter((d) => rel(d).startsWith("services/")).flatMap((src) =>
      folderCycles(unitGraph(src, graph)).map((c) => `${rel(src)}: ${c}`),
    );
    expect(cycles).toEqual([]);
  });

  it("has no import in services/verification/src from a lower layer to a higher one", () => {
    const src = path.join(ROOT, "services/verification/src");
    expect(upwardArrows(unitGraph(src, graph), VERIFICATION_LAYERS)).toEqual([]);
  });

  it("has no import in the other services from a lower layer to a higher one (the one skeleton's floors)", () => {
    // main.ts and start.ts compose; rpc/ and callers.ts face the callers; the use cases stand at the
    // root and in their folders; store/ is the ground, beside the pure helpers that import nothing
    // of their service (merkle.ts, payload.ts), which the store may use (ARCHITECTURE.md, Layout).
    // The gateway is the REST edge, with floors of its own.
    const up = SOURCE_DIRS.filter((d) => rel(d).startsWith("services/") && !["services/verification/src", "services/gateway/src"].includes(rel(d))).flatMap(
      (src) => {
        const units = unitGraph(src, graph);
        const named = new Set(["main.ts", "start.ts", "rpc", "callers.ts", "store"]);
        const leaves = [...units].filter(([u, arrows]) => !named.has(u) && arrows.size === 0).map(([u]) => u);
        const uses = [...units.keys()].filter((u) => !named.has(u) && !leaves.includes(u));
        const layers = [["main.ts", "start.ts"], ["rpc", "callers.ts"], uses, ["store", ...leaves]];
        return upwardArrows(units, layers).map((x) => `${rel(src)}: ${x}`);
      },
    );
    expect(up).toEqual([]);
  });

  const serviceFiles = SOURCE_DIRS.filter((d) => rel(d).startsWith("services/")).flatMap(tsFiles);

  it("has no source file of a service over 400 lines", () => {
    // and the console's browser app (packages/console, TSX)
    const services = SOURCE_DIRS.filter((d) => rel(d).startsWith("services/") || rel(d) === "packages/console/src");
    const long = services
      .flatMap(tsFiles)
      .map((f) => ({ file: rel(f), lines: fs.readFileSync(f, "utf8").split("\n").length - 1 }))
      .filter((x) => x.lines > 400);
    expect(long).toEqual([]);
  });

  it("has no index.ts with logic in services/*/src: only re-exports, or none (a file's name says what it holds)", () => {
    const indexes = serviceFiles.filter((f) => path.basename(f) === "index.ts");
    const withLogic = indexes.filter((f) => !onlyReExports(fs.readFileSync(f, "utf8"))).map(rel);
    expect(withLogic).toEqual([]);
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

  it("holds channel.ts, registry.ts, the generated table.gen.ts, shared/ and one folder per asset type (no index.ts)", () => {
    const files = entries.filter((e) => e.isFile()).map((e) => e.name);
    expect(files.sort()).toEqual(["channel.ts", "registry.ts", "table.gen.ts"]);
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

  it("the generated table imports each channel file, only registry.ts imports the table, and no other file of channels/ imports either", () => {
    const registry = path.join(dir, "registry.ts");
    const table = path.join(dir, "table.gen.ts");
    const channelFiles = Object.entries(CHANNELS_BY_TYPE).flatMap(([type, channels]) => channels.map((c) => path.join(dir, type, `${c}.ts`)));
    const imported = new Set(importsOf(table));
    expect(channelFiles.filter((f) => !imported.has(f)).map(rel)).toEqual([]);
    expect(importsOf(registry)).toContain(table);
    const offenders = tsFiles(dir)
      .filter((f) => (f !== registry && importsOf(f).includes(table)) || (f !== registry && f !== table && importsOf(f).includes(registry)))
      .map(rel);
    expect(offenders).toEqual([]);
    const outside = SOURCE_DIRS.flatMap(tsFiles)
      .filter((f) => !f.startsWith(dir + path.sep) && importsOf(f).includes(table))
      .map(rel);
    expect(outside).toEqual([]);
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
