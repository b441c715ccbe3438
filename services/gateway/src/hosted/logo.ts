/**
 * The hosted page's logo proxy: GET /hosted/logo/{project id} serves the project's logo from our
 * own origin, so the page keeps its CSP (img-src 'self' data:). The logo is fetched over https
 * through the SSRF-guarded client (public addresses only, pinned, no redirects), must be a PNG,
 * JPEG, GIF or WebP (never SVG: it can hold script) of at most 256 KB, and is cached in memory.
 */
import type { Client } from "@connectrpc/connect";
import type { Express, RequestHandler } from "express";
import type { ProjectService } from "@icv/contracts/gen/icv/verification/v1/project_service_pb.ts";
import { createOutboundClient, isId, type Config, type Logger } from "@icv/platform";

const MAX_BYTES = 256 * 1024;
const TTL_MS = 10 * 60_000;
const MAX_ENTRIES = 500;
const TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);

interface Cached {
  url: string;
  type: string;
  bytes: Buffer;
  at: number;
}

/** The page-facing URL of a project's logo (the page never loads the tenant's URL itself). */
export const logoPath = (projectId: string) => `/hosted/logo/${projectId}`;

export function mountLogoProxy(app: Express, limit: RequestHandler, d: { config: Config; logger: Logger; projects: Client<typeof ProjectService> }): void {
  const http = createOutboundClient({ allowPrivate: d.config.ALLOW_PRIVATE_TARGETS, timeoutMs: 5000, maxBodyBytes: MAX_BYTES + 1 });
  const cache = new Map<string, Cached>();
  app.get("/hosted/logo/:projectId", limit, async (req, res) => {
    const id = String(req.params.projectId);
    const notFound = () => res.status(404).setHeader("Cache-Control", "no-store").end();
    try {
      if (!isId("project", id)) return notFound();
      const { logoUrl } = await d.projects.getProjectLogo({ projectId: id });
      if (!logoUrl?.startsWith("https://")) return notFound();
      let hit = cache.get(id);
      if (!hit || hit.url !== logoUrl || Date.now() - hit.at > TTL_MS) {
        const r = await http.request(logoUrl, { headers: { accept: [...TYPES].join(", ") } });
        const type = String(r.headers["content-type"] ?? "")
          .split(";")[0]
          .trim()
          .toLowerCase();
        if (r.status !== 200 || !TYPES.has(type) || r.bytes.length > MAX_BYTES) {
          d.logger.info({ project_id: id, status: r.status, content_type: type }, "logo refused");
          return notFound();
        }
        hit = { url: logoUrl, type, bytes: r.bytes, at: Date.now() };
        cache.delete(id);
        cache.set(id, hit);
        if (cache.size > MAX_ENTRIES) cache.delete(cache.keys().next().value!);
      }
      res.setHeader("Content-Type", hit.type);
      res.setHeader("Content-Security-Policy", "default-src 'none'; sandbox");
      res.setHeader("X-Content-Type-Options", "nosniff");
      res.setHeader("Cross-Origin-Resource-Policy", "same-origin");
      res.setHeader("Cache-Control", "public, max-age=600");
      res.status(200).end(hit.bytes);
    } catch (e) {
      // refused (a private address), timed out, unreachable: the page shows no logo
      d.logger.info({ project_id: id, err: e instanceof Error ? e.message : String(e) }, "logo fetch failed");
      if (!res.headersSent) notFound();
    }
  });
}
