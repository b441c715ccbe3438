// The console's browser app (packages/console: Preact components in TSX, with the passkey library
// and Chart.js) as one ES module, bundled by esbuild when the gateway starts, so `npm start` needs
// no build step. The compiled build (`npm run build`) bundles it ahead into ui/console.bundle.js
// beside this file, and runs without esbuild.
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { BuildOptions } from "esbuild";

const HERE = path.dirname(fileURLToPath(import.meta.url));
/** Where `npm run build` leaves the bundle. */
export const PREBUILT = path.join(HERE, "ui", "console.bundle.js");
export const ENTRY = path.resolve(HERE, "../../../../packages/console/src/main.tsx");

/** esbuild's options for the console: one minified ES module for current browsers, JSX for Preact. */
export const BUNDLE_OPTIONS: BuildOptions & { write: false } = {
  entryPoints: [ENTRY],
  bundle: true,
  format: "esm",
  minify: true,
  target: "es2022",
  jsx: "automatic",
  jsxImportSource: "preact",
  legalComments: "none",
  write: false,
  logLevel: "silent",
};

let built: Buffer | undefined;

/** The bundle: the prebuilt one when there is one, else bundled now (once per process). */
export function consoleBundle(): Buffer {
  if (built) return built;
  if (existsSync(PREBUILT)) built = readFileSync(PREBUILT);
  else {
    // a development dependency: loaded only where the sources are (not in the compiled build)
    const esbuild = createRequire(import.meta.url)("esbuild") as typeof import("esbuild");
    built = Buffer.from(esbuild.buildSync(BUNDLE_OPTIONS).outputFiles[0].contents);
  }
  return built;
}
