import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Express, RequestHandler } from "express";
import { pageHeaders } from "../hosted/page.ts";
import { consoleBundle } from "./bundle.ts";

const UI = path.join(path.dirname(fileURLToPath(import.meta.url)), "ui");

/** Only the console's own files: no inline script or style, no third party, no framing. */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

interface Asset {
  name: string;
  body: Buffer;
  type: string;
}

/** An asset under a name that holds its content's hash, so it can be cached for a year. */
function hashed(base: string, ext: string, body: Buffer, type: string): Asset {
  return { name: `${base}.${createHash("sha256").update(body).digest("hex").slice(0, 16)}.${ext}`, body, type };
}

/** The console's page and assets, read and named once at start. */
export function consoleAssets(): { html: Buffer; assets: Map<string, Asset> } {
  const list = [
    hashed("console", "js", consoleBundle(), "text/javascript; charset=utf-8"),
    hashed("console", "css", readFileSync(path.join(UI, "console.css")), "text/css; charset=utf-8"),
  ];
  const byTemplate: Record<string, string> = { "console.js": list[0].name, "console.css": list[1].name };
  const html = readFileSync(path.join(UI, "index.html"), "utf8").replace(/\{\{([\w.-]+)\}\}/g, (_m, k: string) => `/console/assets/${byTemplate[k]}`);
  return { html: Buffer.from(html), assets: new Map(list.map((a) => [a.name, a])) };
}

/** GET /console and its pages (one HTML shell; the script routes), and /console/assets/<name>.<hash>.<ext>. */
export function mountConsolePage(app: Express, limit: RequestHandler): void {
  const { html, assets } = consoleAssets();
  app.get("/console/assets/:file", limit, (req, res, next) => {
    const a = assets.get(String(req.params.file));
    if (!a) return next();
    res.setHeader("Content-Type", a.type);
    res.setHeader("X-Content-Type-Options", "nosniff");
    res.setHeader("Cross-Origin-Resource-Policy", "same-origin");
    res.setHeader("Cache-Control", "public, max-age=31536000, immutable");
    res.status(200).end(a.body);
  });
  // the page's routes (/console, /console/invite, /console/test/verifications/…): the same shell
  app.get(/^\/console(?:\/(?!api\/|api$|assets\/)[\w/.-]*)?$/, limit, (_req, res) => {
    res.setHeader("Content-Type", "text/html; charset=utf-8");
    pageHeaders(res, CONSOLE_CSP);
    res.status(200).end(html);
  });
}
