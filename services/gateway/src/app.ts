import type http from "node:http";
import express, { type Express, type NextFunction, type Request, type Response } from "express";
import { systemClock, type Clock, type Config, type Logger } from "@icv/platform";
import { Passkeys } from "./console/passkeys.ts";
import { consoleApi } from "./console/routes.ts";
import { mountConsolePage } from "./console/page.ts";
import type { ConsoleStore } from "./console/store.ts";
import type { Tenants } from "./tenants.ts";
import { keyAuth, rateLimit, type KeyAuth } from "./auth.ts";
import type { Clients } from "./clients.ts";
import { renderDocs, renderLanding } from "./docs.ts";
import { docsAssets, mountDocsAssets } from "./docs-page.ts";
import { fastPath } from "./fast-path.ts";
import { errorHandler, notFound, requestId, requireJson } from "./http.ts";
import type { HostedHub } from "./hosted/hub.ts";
import { mountHostedPage } from "./hosted/page.ts";
import { mountLogoProxy } from "./hosted/logo.ts";
import { mountFavicon } from "./hosted/favicon.ts";
import { tenantNames } from "./hosted/branding.ts";
import { mountProviderHooks } from "./hooks/routes.ts";
import { idempotency } from "./idempotency.ts";
import { jsonBody, queryEncoding } from "./input.ts";
import { buildOpenApi } from "./openapi.ts";
import { observeHttp } from "./observe.ts";
import { MemoryRateLimiter, type RateLimiter } from "./rate-limit.ts";
import { mount, type RouteDef } from "./registry.ts";
import { hostedRoutes } from "./routes/hosted.ts";
import { API_VERSION, metaRoutes, type HealthDeps } from "./routes/meta.ts";
import { oauthRoutes } from "./routes/oauth.ts";
import { profileRoutes } from "./routes/profiles.ts";
import { mountProfilePage } from "./hosted/profile-page.ts";
import { proofRoutes } from "./routes/proofs.ts";
import { logRoutes, mountLogTiles } from "./routes/log.ts";
import { credentialRoutes } from "./routes/credentials.ts";
import { domainRoutes } from "./routes/domains.ts";
import { projectRoutes } from "./routes/projects.ts";
import { reuseRoutes } from "./routes/reuse.ts";
import { sessionRoutes } from "./routes/sessions.ts";
import { testMessageRoutes } from "./routes/test-messages.ts";
import { verificationEventRoutes } from "./routes/verification-events.ts";
import { verificationRequestRoutes } from "./routes/verification-requests.ts";
import { verificationRoutes } from "./routes/verifications.ts";
import { verifiedUserRoutes } from "./routes/verified-users.ts";
import { personalDataRoutes } from "./routes/personal-data.ts";
import { webhookDeliveryRoutes } from "./routes/webhook-deliveries.ts";
import type { SseHub } from "./sse/hub.ts";
import type { GatewayStore } from "./store.ts";

export interface GatewayDeps {
  config: Config;
  logger: Logger;
  store: GatewayStore;
  clients: Clients;
  limiter: RateLimiter;
  redisPing?: () => Promise<boolean>;
  kafkaUp?: () => boolean;
  /** Server-sent event streams (without it the events route is documented but not mounted). */
  sse?: SseHub;
  /** The hosted page's event streams (without it the page still works, without live updates). */
  hosted?: HostedHub;
  /** The tenant console's API (without it /console is not mounted). */
  console?: { store: ConsoleStore; tenants: Tenants; clock?: Clock };
}

const PUBLIC_LIMIT_FACTOR = 6; // public endpoints: 6× the per-key limit, per client IP
/**
 * The probes' routes (readiness: /health; startup and liveness: /api/v1) are not limited like API
 * traffic: a burst from the kubelet's address must never answer 429. Calls of /health made while
 * its check runs share that check (routes/meta.ts): a burst costs the backends one check at a time.
 */
const PROBES = new Set(["/health", "/api/v1"]);

/**
 * The Express app: REST ⇄ RPC translation, auth, limits, validation, OpenAPI and docs; and the
 * listener a server runs, which hands the two hottest routes' plain requests to the fast path
 * (fast-path.ts) and everything else to the app.
 */
export function buildApp(deps: GatewayDeps): { app: Express; listener: http.RequestListener; auth: KeyAuth; routes: RouteDef[] } {
  const { config, logger, store, clients, limiter } = deps;
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.set("trust proxy", config.TRUST_PROXY);
  app.set("query parser", "simple");

  // who is asking, on the hosted pages of a project without a business name
  const names = tenantNames((id) => store.tenantName(id));
  const auth = keyAuth(store, config.API_KEY_CACHE_TTL_MS, { limiter, perMinute: config.AUTH_FAILURES_PER_MINUTE }, logger);
  let openapiDoc: Record<string, unknown> | undefined;
  let docsHtml: string | undefined;
  let landingHtml: string | undefined;
  const health: HealthDeps = { clients, database: () => store.ping(), redis: deps.redisPing, kafka: deps.kafkaUp };
  const routes: RouteDef[] = [
    ...metaRoutes(
      health,
      () => (openapiDoc ??= buildOpenApi(routes, { version: API_VERSION, serverUrl: config.publicBaseUrl })),
      () =>
        (docsHtml ??= renderDocs((openapiDoc ??= buildOpenApi(routes, { version: API_VERSION, serverUrl: config.publicBaseUrl })), {
          scalar: docsAssets().scalar.name,
          config: docsAssets().config.name,
        })),
      () => (landingHtml ??= renderLanding((openapiDoc ??= buildOpenApi(routes, { version: API_VERSION, serverUrl: config.publicBaseUrl })))),
    ),
    ...verifiedUserRoutes(clients),
    ...personalDataRoutes(clients),
    ...verificationRoutes(clients),
    ...domainRoutes(clients),
    ...verificationEventRoutes(clients, deps.sse),
    ...verificationRequestRoutes(config, clients.requests),
    ...hostedRoutes(config, deps.hosted, clients.requests, names),
    ...reuseRoutes(config, clients.requests),
    ...proofRoutes(clients),
    ...logRoutes(clients),
    ...credentialRoutes(config, clients),
    ...webhookDeliveryRoutes(clients),
    ...testMessageRoutes(clients),
    ...sessionRoutes(clients, names),
    ...oauthRoutes(clients.verification),
    ...projectRoutes(clients.projects),
    ...profileRoutes(config, clients),
  ];
  // literal paths before parameterised ones (e.g. /proofs/revoked before /proofs/{id}/…)
  routes.sort((a, b) => Number(a.path.includes("{")) - Number(b.path.includes("{")));

  app.use(observeHttp);
  app.use(requestId);
  app.use(queryEncoding);
  app.use((req, res, next) => {
    // the request log is at debug level: nothing to time or listen for otherwise
    if (!logger.isLevelEnabled("debug")) return next();
    const start = process.hrtime.bigint();
    res.on("finish", () => {
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      logger.debug(
        {
          request_id: req.requestId,
          tenant_id: req.scope?.tenantId,
          method: req.method,
          path: req.route?.path ?? req.path,
          status: res.statusCode,
          ms,
        },
        "request",
      );
    });
    next();
  });
  // a request that says nothing of a body (no Content-Length, no Transfer-Encoding: nearly every
  // GET) has nothing to check or read; body-parser and type-is would decide the same
  const json = (req: Request, res: Response, next: NextFunction) => {
    if (req.headers["content-length"] === undefined && req.headers["transfer-encoding"] === undefined) {
      req.body = undefined;
      return next();
    }
    requireJson(req, res, (err?: unknown) => (err ? next(err) : jsonBody(req, res, next)));
  };
  const keyLimit = rateLimit(limiter, config.RATE_LIMIT_PER_MINUTE, (req: Request) => `key:${req.keyId}`);
  const ipLimit = rateLimit(limiter, config.RATE_LIMIT_PER_MINUTE * PUBLIC_LIMIT_FACTOR, (req: Request) => `ip:${req.ip}`);
  // the public API routes (health, JWKS, revocation list, …) count per replica: they never touch Redis
  const publicLimit = rateLimit(new MemoryRateLimiter(), config.RATE_LIMIT_PER_MINUTE * PUBLIC_LIMIT_FACTOR, (req: Request) => `ip:${req.ip}`);
  const replay = idempotency(store);
  mount(app, routes, (def) => (def.auth === "key" ? [auth.middleware, keyLimit, json, replay] : PROBES.has(def.path) ? [json] : [publicLimit, json]));
  if (deps.console) {
    const { store: cstore, tenants, clock = systemClock } = deps.console;
    app.use(
      "/console/api",
      consoleApi({
        config,
        logger,
        clock,
        store: cstore,
        passkeys: new Passkeys(cstore, config, clock),
        tenants,
        tenantName: (id) => store.tenantName(id),
        limiter,
        publicRoutes: routes,
        json,
        clients,
        keyRevoked: () => auth.forget(),
      }),
    );
    mountConsolePage(app, ipLimit);
  }
  mountHostedPage(app, ipLimit);
  mountDocsAssets(app, publicLimit);
  mountLogoProxy(app, ipLimit, { config, logger, projects: clients.projects });
  mountProfilePage(app, ipLimit, clients.profiles);
  mountLogTiles(app, publicLimit, clients.log);
  mountFavicon(app);
  mountProviderHooks(app, { config, logger, session: clients.session, limiter });
  app.use(notFound);
  app.use(errorHandler(logger));
  const fast = fastPath({ routes, auth, limiter, perMinute: config.RATE_LIMIT_PER_MINUTE, logger });
  return { app, listener: (req, res) => fast(req, res) || app(req, res), auth, routes };
}
