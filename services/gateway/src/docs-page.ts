import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { gzip } from "node:zlib";
import type { Express, RequestHandler } from "express";

const DIR = path.dirname(fileURLToPath(import.meta.url));

/**
 * /docs runs Scalar's kept bundle, so its policy is the console's with what the renderer needs and
 * no more: style-src adds 'unsafe-inline' (the bundle injects `<style>` elements and sets style
 * attributes in markup it builds at run time; a nonce covers only some of them, as Chromium's CSP
 * reports showed), img-src adds blob: (try-it shows image answers) and font-src data:. Scripts stay
 * this origin's files only (no inline script, no eval), and connections this origin only (the
 * document and try-it), so the page can reach no CDN or third party even if the bundle asked.
 */
export const DOCS_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

interface Asset {
  name: string;
  body: Buffer;
}

/**
 * Scalar's standalone browser bundle (window.Scalar): beside this file in the built app (`npm run
 * build` copies it there: the package is a dev dependency, and the rest of it is never run), else
 * from the installed @scalar/api-reference.
 */
function scalarBundle(): Buffer {
  const built = path.join(DIR, "scalar-standalone.js");
  if (existsSync(built)) return readFileSync(built);
  // the package exports no path to it: its stylesheet (dist/style.css) is its neighbour's
  const css = createRequire(import.meta.url).resolve("@scalar/api-reference/style.css");
  return readFileSync(path.join(path.dirname(css), "browser", "standalone.js"));
}

/** An asset under a name that holds its content's hash, so it is cached for a year. */
const hashed = (base: string, body: Buffer): Asset => ({ name: `${base}.${createHash("sha256").update(body).digest("hex").slice(0, 16)}.js`, body });

let loaded: { scalar: Asset; config: Asset } | undefined;

/** The two scripts of /docs, read and named once. */
export function docsAssets(): { scalar: Asset; config: Asset } {
  loaded ??= { scalar: hashed("scalar", scalarBundle()), config: hashed("docs", readFileSync(path.join(DIR, "docs-client.js"))) };
  return loaded;
}

const gzipped = promisify(gzip);

/** GET /docs/assets/<name>.<hash>.js: the renderer and its configuration, from this origin, long cached (gzip-encoded when the browser takes it, compressed once). */
export function mountDocsAssets(app: Express, limit: RequestHandler): void {
  const { scalar, config } = docsAssets();
  const byName = new Map([scalar, config].map((a) => [a.name, a]));
  const compressed = new Map<string, Promise<Buffer>>();
  app.get("/docs/assets/:file", limit, async (req, res, next) => {
    const a = byName.get(String(req.params.file));
    if (!a) return next();
    res.setHeader("Content-Type", "text/javascript; charset=utf-8");
    res.setHeader("X-Content-Type-Options", "nosniff");
    res.setHeader("Cross-Origin-Resource-Policy", "same-origin");
    res.setHeader("Cache-Control", "public, max-age=31536000, immutable");
    res.setHeader("Vary", "Accept-Encoding");
    if (!/\bgzip\b/.test(String(req.headers["accept-encoding"] ?? ""))) {
      res.status(200).end(a.body);
      return;
    }
    let body = compressed.get(a.name);
    if (!body) compressed.set(a.name, (body = gzipped(a.body)));
    res.setHeader("Content-Encoding", "gzip");
    res.status(200).end(await body);
  });
}
