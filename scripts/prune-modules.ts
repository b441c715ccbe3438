/**
 * Removes from a production `node_modules` what nothing loads at run time, so the image carries
 * only code that runs (docs/operations.md "Image"):
 *   node --import tsx scripts/prune-modules.ts <dir with node_modules>
 * - type declarations (`*.d.ts`…) and TypeScript sources (Node never loads .ts under node_modules),
 * - the dependencies' source maps and markdown (licences are kept),
 * - second copies of a package in a module format nobody asks for: the CommonJS builds of viem
 *   and ox (this app imports them as ESM, and no CommonJS package requires them), and the
 *   ESM builds of @opentelemetry/* (Node resolves them to their CommonJS `build/src`).
 * test/build/dist.test.ts runs the pruned app (the same as the image's).
 */
import { readdirSync, rmSync, statSync } from "node:fs";
import path from "node:path";

const DROP_FILE = /(\.d\.[cm]?ts|\.[cm]?ts|\.map|\.md|\.markdown)$/i;
const KEEP_FILE = /^(licen[cs]e|copying|notice)/i;
const DROP_DIRS = ["viem/_cjs", "viem/_types", "ox/_cjs", "ox/_types"];
const DROP_BUILDS = ["build/esm", "build/esnext"];

function walk(dir: string, onFile: (file: string) => void): void {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p, onFile);
    else if (e.isFile()) onFile(p);
  }
}

/** Prunes `<root>/node_modules`; answers the bytes removed. */
export function pruneModules(root: string): number {
  const modules = path.join(root, "node_modules");
  let removed = 0;
  const drop = (p: string) => {
    let size = 0;
    try {
      const s = statSync(p);
      if (s.isDirectory()) walk(p, (f) => (size += statSync(f).size));
      else size = s.size;
    } catch {
      return;
    }
    rmSync(p, { recursive: true, force: true });
    removed += size;
  };
  for (const d of DROP_DIRS) drop(path.join(modules, d));
  const otel = path.join(modules, "@opentelemetry");
  for (const pkg of readdirSync(otel, { withFileTypes: true }).filter((e) => e.isDirectory())) for (const b of DROP_BUILDS) drop(path.join(otel, pkg.name, b));
  walk(modules, (f) => {
    const name = path.basename(f);
    if (DROP_FILE.test(name) && !KEEP_FILE.test(name)) drop(f);
  });
  return removed;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const dir = path.resolve(process.argv[2] ?? "dist");
  const bytes = pruneModules(dir);
  console.log(`prune-modules: removed ${(bytes / 1e6).toFixed(1)} MB from ${path.join(dir, "node_modules")}`);
}
