// `npm run build`: the services compiled to JavaScript in dist/, a self-contained app directory
// (what the image runs):
//
//   dist/package.json, dist/package-lock.json        the root manifest (scripts run the .js) and the lockfile,
//                                                     both without dev dependencies
//   dist/scripts/start-all.js, dist/scripts/admin.js the all-in-one and the admin CLI
//   dist/scripts/migrate.js                           every service's migrations, then exit (the chart's Job)
//   dist/<workspace>/package.json                    exports point at the compiled .js
//   dist/<workspace>/src/**.js (+ .js.map)            tsc's output
//   dist/<workspace>/**                               every other file of the workspace (SQL migrations,
//                                                     the hosted page's html/css/js), tests and data left out
//   dist/services/gateway/src/scalar-standalone.js   the API reference's renderer (a dev dependency's bundle)
//   dist/services/gateway/src/console/ui/console.bundle.js  the console's browser app (packages/console),
//                                                     bundled here by esbuild (the source tree bundles it at start)
//
// `cd dist && npm ci --omit=dev && node scripts/start-all.js` runs it. Type errors are `npm run
// typecheck`'s job; the emit runs with --noCheck because imports of workspace packages keep their
// `.ts` extension (tsc rewrites relative imports only; the exports below map `*.ts` to `*.js`).
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { buildSync } from "esbuild";
import { BUNDLE_OPTIONS } from "../services/gateway/src/console/bundle.ts";

const root = path.resolve(import.meta.dirname, "..");
const out = path.resolve(root, process.argv[2] ?? "dist");
const SKIP = new Set(["node_modules", "test", "data", "dist"]);

type Exports = string | { [key: string]: Exports };
interface Manifest {
  workspaces?: string[];
  scripts?: Record<string, string>;
  exports?: Exports;
  [key: string]: unknown;
}

const readJson = (file: string): Manifest => JSON.parse(readFileSync(file, "utf8")) as Manifest;
const writeJson = (file: string, value: unknown): void => writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
const toJs = (s: string): string => s.replace(/\.ts$/, ".js");

/** `./src/index.ts` → `./src/index.js`; a pattern `./*` → `./src/*` also gets `./*.ts` → `./src/*.js` first. */
function compiledExports(e: Exports): Exports {
  if (typeof e === "string") return toJs(e);
  const result: { [key: string]: Exports } = {};
  for (const [key, value] of Object.entries(e)) {
    if (key.endsWith("*") && typeof value === "string" && value.endsWith("*")) result[`${key}.ts`] = `${value}.js`;
    result[key] = compiledExports(value);
  }
  return result;
}

/** `node --import tsx src/main.ts` → `node src/main.js`, for the scripts whose file was compiled into `dir` */
function compiledScripts(scripts: Record<string, string> | undefined, dir: string): Record<string, string> | undefined {
  if (!scripts) return undefined;
  const prefix = "node --import tsx ";
  return Object.fromEntries(
    Object.entries(scripts)
      .filter(([, cmd]) => cmd.startsWith(prefix) && existsSync(path.join(dir, toJs(cmd.slice(prefix.length)))))
      .map(([name, cmd]) => [name, `node ${toJs(cmd.slice(prefix.length))}`]),
  );
}

/** Every file of a workspace but its TypeScript sources (compiled instead), tests, data and node_modules. */
function copyAssets(from: string, to: string): string[] {
  const copied: string[] = [];
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    if (SKIP.has(entry.name)) continue;
    const src = path.join(from, entry.name);
    const dst = path.join(to, entry.name);
    if (entry.isDirectory()) copied.push(...copyAssets(src, dst));
    else if (entry.isFile() && !entry.name.endsWith(".ts") && entry.name !== "package.json") {
      mkdirSync(to, { recursive: true });
      copyFileSync(src, dst);
      copied.push(dst);
    }
  }
  return copied;
}

rmSync(out, { recursive: true, force: true });
execFileSync(
  process.execPath,
  [path.join(root, "node_modules/typescript/bin/tsc"), "-p", path.join(root, "tsconfig.build.json"), "--noCheck", "--outDir", out],
  {
    stdio: "inherit",
  },
);
const emitted = new Set<string>();
const walk = (dir: string): void => {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p);
    else emitted.add(p);
  }
};
walk(out);

const rootManifest = readJson(path.join(root, "package.json"));
const clashes: string[] = [];
for (const ws of rootManifest.workspaces ?? []) {
  const manifest = readJson(path.join(root, ws, "package.json"));
  for (const f of copyAssets(path.join(root, ws), path.join(out, ws))) if (emitted.has(f)) clashes.push(path.relative(out, f));
  const compiled: Manifest = { ...manifest };
  if (manifest.exports) compiled.exports = compiledExports(manifest.exports);
  if (manifest.scripts) compiled.scripts = compiledScripts(manifest.scripts, path.join(out, ws));
  writeJson(path.join(out, ws, "package.json"), compiled);
}
// the API reference's renderer (services/gateway/src/docs-page.ts): Scalar's standalone browser
// bundle, the one file of @scalar/api-reference (a dev dependency) that is served
copyFileSync(path.join(root, "node_modules/@scalar/api-reference/dist/browser/standalone.js"), path.join(out, "services/gateway/src/scalar-standalone.js"));
if (clashes.length) {
  console.error(`build: these files would overwrite compiled modules of the same name (rename them):\n  ${clashes.join("\n  ")}`);
  process.exit(1);
}
// production manifest and lockfile: the committed lockfile without its dev-only entries, so that
// `npm ci --omit=dev` installs exactly the locked versions (the full lockfile fails npm ci's sync
// check here: it lacks other platforms' optional @bufbuild/buf binaries, a dev dependency)
const { devDependencies: _dev, ...prodManifest } = rootManifest;
writeJson(path.join(out, "package.json"), { ...prodManifest, scripts: compiledScripts(rootManifest.scripts, out) });
const lock = JSON.parse(readFileSync(path.join(root, "package-lock.json"), "utf8")) as {
  packages: Record<string, { dev?: boolean; devDependencies?: unknown }>;
};
const { devDependencies: _lockDev, ...lockRoot } = lock.packages[""];
lock.packages = Object.fromEntries(Object.entries(lock.packages).filter(([, p]) => !p.dev));
lock.packages[""] = lockRoot;
writeJson(path.join(out, "package-lock.json"), lock);
const bundle = path.join(out, "services/gateway/src/console/ui/console.bundle.js");
writeFileSync(bundle, buildSync(BUNDLE_OPTIONS).outputFiles[0].contents);
if (!existsSync(path.join(out, "scripts", "start-all.js"))) throw new Error("build: dist/scripts/start-all.js is missing");
console.log(`build: ${emitted.size} compiled files in ${path.relative(root, out) || out}`);
