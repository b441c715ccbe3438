import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Express, RequestHandler, Response } from "express";

const DIR = path.dirname(fileURLToPath(import.meta.url));

/** The page's only sources are its own files: no third-party script, style, font or frame, no form posts. */
export const PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

interface Asset {
  body: Buffer;
  type: string;
}

// read once at start: the page is static, the request's data comes from the API
// page-client.js (served as /hosted/page.js) is named apart from this module: `npm run build` compiles
// page.ts to page.js in the same directory
const files: Record<string, Asset> = {
  page: { body: readFileSync(path.join(DIR, "index.html")), type: "text/html; charset=utf-8" },
  "page.js": { body: readFileSync(path.join(DIR, "page-client.js")), type: "text/javascript; charset=utf-8" },
  "texts.js": { body: readFileSync(path.join(DIR, "texts.js")), type: "text/javascript; charset=utf-8" },
  "domain-view.js": { body: readFileSync(path.join(DIR, "domain-view.js")), type: "text/javascript; charset=utf-8" },
  "accounts.js": { body: readFileSync(path.join(DIR, "page-accounts.js")), type: "text/javascript; charset=utf-8" },
  "branding.js": { body: readFileSync(path.join(DIR, "branding-client.js")), type: "text/javascript; charset=utf-8" },
  "page.css": { body: readFileSync(path.join(DIR, "page.css")), type: "text/css; charset=utf-8" },
  // the sessions' page (session_url)
  session: { body: readFileSync(path.join(DIR, "session.html")), type: "text/html; charset=utf-8" },
  "session.js": { body: readFileSync(path.join(DIR, "session-client.js")), type: "text/javascript; charset=utf-8" },
};

function send(res: Response, a: Asset): void {
  res.setHeader("Content-Type", a.type);
  pageHeaders(res, PAGE_CSP);
  res.status(200).end(a.body);
}

/** The headers of a page the gateway serves to browsers (the hosted page, public profiles): CSP, no referrer, no framing, no caching. */
export function pageHeaders(res: Response, csp: string): void {
  res.setHeader("Content-Security-Policy", csp);
  // the token is in the fragment: never pass the page URL on (browsers drop fragments from Referer anyway)
  res.setHeader("Referrer-Policy", "no-referrer");
  res.setHeader("X-Content-Type-Options", "nosniff");
  res.setHeader("X-Frame-Options", "DENY");
  res.setHeader("Cross-Origin-Opener-Policy", "same-origin");
  res.setHeader("Cross-Origin-Resource-Policy", "same-origin");
  res.setHeader("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=()");
  res.setHeader("Cache-Control", "no-store");
}

/** GET /verify/{id} (the page at verification_url), GET /session/{id} (a session's session_url) and their static files under /hosted/. */
export function mountHostedPage(app: Express, limit: RequestHandler): void {
  app.get("/verify/:id", limit, (_req, res) => send(res, files.page));
  app.get("/session/:id", limit, (_req, res) => send(res, files.session));
  app.get("/hosted/:file", limit, (req, res, next) => {
    const name = String(req.params.file);
    const a = name !== "page" && name !== "session" && Object.hasOwn(files, name) ? files[name] : undefined;
    if (!a) return next();
    send(res, a);
  });
}
