import { z } from "zod";
import type { ServiceName } from "@icv/platform";
import type { Clients } from "../clients.ts";
import { route, type RouteDef } from "../registry.ts";
import { timestamp } from "../schemas.ts";
import { DOCS_CSP } from "../docs-page.ts";
import { pageHeaders } from "../hosted/page.ts";

const Health = z
  .object({
    status: z.enum(["healthy", "degraded", "unhealthy"]),
    timestamp,
    services: z.record(z.string(), z.enum(["up", "down", "disabled"])),
  })
  .meta({ id: "Health" });

const ApiInfo = z.object({ name: z.string(), version: z.string(), description: z.string() }).meta({ id: "ApiInfo" });

export const API_VERSION = "1.0.0";

/** GET /api/v1: what this API is (static; the starting gateway answers it too). */
export const API_INFO = {
  name: "icv",
  version: API_VERSION,
  description: "Identity-control verification: prove a user controls an asset and get a signed proof.",
};

export interface HealthDeps {
  clients: Clients;
  database: () => Promise<boolean>;
  /** undefined when Redis is not configured (in-process limits). */
  redis?: () => Promise<boolean>;
  /** undefined unless KAFKA_BROKERS is set: the event consumers are connected. */
  kafka?: () => boolean;
}

const PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'";

/** The answer of `check`, shared by every call made while it runs: at most one check in flight. */
export function shared<T>(check: () => Promise<T>): () => Promise<T> {
  let running: Promise<T> | undefined;
  return () =>
    (running ??= check().finally(() => {
      running = undefined;
    }));
}

/**
 * /health: the database, Redis and each service through its gRPC health endpoint, checked in
 * parallel; not rate limited (the probes call it), so calls made while a check runs share it.
 */
export function metaRoutes(deps: HealthDeps, openapi: () => Record<string, unknown>, docs: () => string, landing: () => string): RouteDef[] {
  const checks = shared(async () => {
    const names = Object.keys(deps.clients.urls) as ServiceName[];
    const [db, redis, ...svcs] = await Promise.all([
      deps.database().catch(() => false),
      deps.redis ? deps.redis().catch(() => false) : Promise.resolve(undefined),
      ...names.map((n) => deps.clients.health(n)),
    ]);
    return { names, db, redis, svcs };
  });
  return [
    route({
      method: "get",
      path: "/",
      tag: "Meta",
      summary: "Landing page",
      description: "Where a developer starts: links to the API reference, the OpenAPI document, /health and /api/v1, and the guides by area.",
      auth: "public",
      responses: { 200: { description: "HTML page", contentType: "text/html" } },
      async handler({ res }) {
        res.setHeader("Content-Security-Policy", PAGE_CSP);
        res.type("html").send(landing());
        return {};
      },
    }),
    route({
      method: "get",
      path: "/health",
      tag: "Meta",
      summary: "Service health",
      description:
        "Whether this replica and what it depends on (database, Redis when configured, the internal services) answer; 503 with the failing parts while any is down. Load balancers and orchestrators poll it; it needs no key.",
      auth: "public",
      responses: { 200: { description: "Healthy or degraded", schema: Health }, 503: { description: "Unhealthy", schema: Health } },
      async handler() {
        const { names, db, redis, svcs } = await checks();
        const services: Record<string, "up" | "down" | "disabled"> = {
          database: db ? "up" : "down",
          redis: redis === undefined ? "disabled" : redis ? "up" : "down",
        };
        names.forEach((n, i) => {
          services[n] = svcs[i] ? "up" : "down";
        });
        if (deps.kafka) services.kafka = deps.kafka() ? "up" : "down";
        const core = db && svcs[names.indexOf("verification")] && svcs[names.indexOf("proof")];
        const all = Object.values(services).every((s) => s !== "down");
        const status = !core ? "unhealthy" : all ? "healthy" : "degraded";
        return {
          status: status === "unhealthy" ? 503 : 200,
          headers: { "Cache-Control": "no-store" },
          body: { status, timestamp: new Date().toISOString(), services },
        };
      },
    }),
    route({
      method: "get",
      path: "/api/v1",
      tag: "Meta",
      summary: "API name and version",
      description: "The API's name and version and where its description lives; a cheap call to check a base URL and a key's reachability.",
      auth: "public",
      responses: { 200: { description: "About this API", schema: ApiInfo } },
      async handler() {
        return { body: API_INFO };
      },
    }),
    route({
      method: "get",
      path: "/api/openapi.json",
      tag: "Meta",
      summary: "This description (OpenAPI 3.0)",
      description:
        "This API's OpenAPI 3.0 document, generated from the same route table that validates requests, so it always matches what the server accepts and answers.",
      auth: "public",
      responses: { 200: { description: "OpenAPI document" } },
      async handler() {
        return { headers: { "Cache-Control": "public, max-age=300" }, body: openapi() };
      },
    }),
    route({
      method: "get",
      path: "/docs",
      tag: "Meta",
      summary: "Readable API reference",
      description:
        "The API reference as a web page: /api/openapi.json rendered by Scalar's kept renderer, served from this origin (no CDN), with search, examples and try-it against this server. Try-it sends test keys (pk_test_…) only; the page also holds the reference as plain HTML for a reader without scripts.",
      auth: "public",
      responses: { 200: { description: "HTML page", contentType: "text/html" } },
      async handler({ res }) {
        pageHeaders(res, DOCS_CSP);
        res.type("html").send(docs());
        return {};
      },
    }),
  ];
}
