import express, { type NextFunction, type Request, type RequestHandler, type Response, type Router } from "express";
import { z } from "zod";
import { AppError, iso, type Clock, type Config, type EnvName, type Logger } from "@icv/platform";
import type { RateLimiter } from "../rate-limit.ts";
import { rateHeaders } from "../auth.ts";
import { mount, route, type RouteDef } from "../registry.ts";
import { PageQuery } from "../schemas.ts";
import type { Tenants } from "../tenants.ts";
import { csrfMatches, csrfOf, invite, type Passkeys } from "./passkeys.ts";
import { timelineRoute } from "./timeline.ts";
import { webhookRoutes } from "./webhook-routes.ts";
import { insightRoutes } from "./insight-routes.ts";
import { retentionRoutes } from "./retention-routes.ts";
import type { Clients } from "../clients.ts";
import type { AuditEntry, ConsoleStore, ConsoleUser } from "./store.ts";

declare module "express-serve-static-core" {
  interface Request {
    console?: { user: ConsoleUser; sessionId: string };
  }
}

export const COOKIE = "icv_console";
/** Sign-in and invite attempts per minute: per client IP (people behind one office address), and per user. */
export const SIGN_IN_PER_IP = 30;
export const SIGN_IN_PER_USER = 10;

/**
 * The public API's routes the console offers, per environment (`/console/api/{env}/…` for
 * `/api/v1/…`): the same handlers, RPCs, shapes and errors, with the session's tenant instead of
 * a key's. Anything else of the public API is not reachable with a session.
 */
const OFFERED = new Set([
  "get /api/v1/verifications",
  "get /api/v1/verifications/{id}",
  "get /api/v1/verification-requests",
  "get /api/v1/verification-requests/{id}",
  "get /api/v1/proofs/{id}/status",
  "post /api/v1/proofs/{id}/revoke",
  "post /api/v1/proofs/validate",
  "get /api/v1/webhook-deliveries",
  "get /api/v1/webhook-deliveries/stats",
  "get /api/v1/webhook-deliveries/{id}",
  "post /api/v1/webhook-deliveries/{id}/retry",
  "get /api/v1/test/messages",
  "get /api/v1/me/projects",
  "post /api/v1/me/projects",
  "get /api/v1/me/projects/{id}",
  "patch /api/v1/me/projects/{id}",
  "get /api/v1/me/projects/{id}/templates",
  "post /api/v1/me/projects/{id}/templates/preview",
  "get /api/v1/me/projects/{id}/templates/{channel}/{type}",
  "put /api/v1/me/projects/{id}/templates/{channel}/{type}",
  "get /api/v1/me/profiles",
  "get /api/v1/me/profiles/{id}",
]);
/** POSTs that only read (a viewer may make them): a proof checked, a search by identifier (a POST to keep it out of URLs). */
const READING_POSTS = new Set(["/proofs/validate", "/search/verifications"]);

export interface ConsoleDeps {
  config: Config;
  logger: Logger;
  clock: Clock;
  store: ConsoleStore;
  passkeys: Passkeys;
  tenants: Tenants;
  tenantName: (id: string) => Promise<string | undefined>;
  limiter: RateLimiter;
  /** The public API's routes (those in OFFERED are mounted per environment). */
  publicRoutes: RouteDef[];
  clients: Clients;
  /** JSON bodies, as the public API reads them. */
  json: RequestHandler;
  /** Forget cached key lookups (a key revoked here is refused at once on this replica). */
  keyRevoked: () => void;
}

const ENVS = new Set(["live", "test"]);
const Page = z.object(PageQuery).strict();
const pagination = (page: number, limit: number, total: number) => {
  const pages = Math.ceil(total / limit);
  return { page, limit, total, pages, hasMore: page < pages, has_more: page < pages };
};

function cookieOf(req: Request): string | undefined {
  for (const part of (req.headers.cookie ?? "").split(";")) {
    const [k, ...v] = part.trim().split("=");
    if (k === COOKIE) return v.join("=") || undefined;
  }
  return undefined;
}

/** `/console/api/…`: sign-in, the session's own routes, and per environment the offered public routes and keys. */
export function consoleApi(d: ConsoleDeps): Router {
  const { store, passkeys, clock } = d;
  const api = express.Router();
  const from = (req: Request) => ({ ip: req.ip, userAgent: req.get("user-agent") });
  const audit = (req: Request, e: Omit<AuditEntry, "ip" | "userAgent">) =>
    store.audit({ ...e, ...from(req) }, clock.now()).catch((err) => d.logger.error({ err, action: e.action }, "could not write the console audit log"));
  const limit = (key: string) => async (_req: Request, res: Response) => {
    const refused = rateHeaders(res, await d.limiter.consume(key, key.startsWith("console-ip:") ? SIGN_IN_PER_IP : SIGN_IN_PER_USER));
    if (refused) throw refused;
  };
  const setCookie = (res: Response, value: string, maxAge?: number) =>
    res.setHeader(
      "Set-Cookie",
      `${COOKIE}=${value}; Path=/console; HttpOnly; SameSite=Strict${passkeys.secure ? "; Secure" : ""}${maxAge === undefined ? "" : `; Max-Age=${maxAge}`}`,
    );
  const signedIn = async (req: Request, res: Response, user: ConsoleUser, action: string) => {
    const s = await passkeys.openSession(user, from(req));
    setCookie(res, s.id);
    await audit(req, { tenantId: user.tenant_id, userId: user.id, email: user.email, action, outcome: "ok" });
    return { body: { user: userOut(user), csrf_token: s.csrf } };
  };

  api.use((_req, res, next) => {
    res.setHeader("Cache-Control", "no-store");
    next();
  });

  const Token = z.object({ token: z.string().min(1).max(100) }).strict();
  const WebAuthnBody = z.object({ response: z.record(z.string(), z.unknown()) });
  const open: RouteDef[] = [
    route({
      ...meta("post", "/invite/options"),
      body: Token,
      async handler({ req, res, body }) {
        await limit(`console-ip:${req.ip}`)(req, res);
        const { options, user } = await passkeys.registrationOptions(body.token);
        return { body: { options, email: user.email } };
      },
    }),
    route({
      ...meta("post", "/invite/accept"),
      body: Token.extend(WebAuthnBody.shape).strict(),
      async handler({ req, res, body }) {
        await limit(`console-ip:${req.ip}`)(req, res);
        const user = await passkeys.register(body.token, body.response as never);
        return signedIn(req, res, user, "passkey.registered");
      },
    }),
    route({
      ...meta("post", "/sign-in/options"),
      async handler({ req, res }) {
        await limit(`console-ip:${req.ip}`)(req, res);
        return { body: { options: await passkeys.signInOptions() } };
      },
    }),
    route({
      ...meta("post", "/sign-in"),
      body: WebAuthnBody.strict(),
      async handler({ req, res, body }) {
        await limit(`console-ip:${req.ip}`)(req, res);
        const claimed = await passkeys.claimedUser(body.response as never);
        if (claimed) await limit(`console-user:${claimed}`)(req, res);
        const user = await passkeys.signIn(body.response as never).catch(async (e) => {
          const who = claimed ? await passkeys.passkeyOwner(body.response as never) : undefined;
          if (who) await audit(req, { tenantId: who.tenant_id, userId: who.id, email: who.email, action: "session.sign_in", outcome: "failed" });
          throw e;
        });
        return signedIn(req, res, user, "session.signed_in");
      },
    }),
  ];
  mount(api, open, () => [d.json]);

  // everything below needs a live session; a change also needs the CSRF token, and a role that may make it
  api.use(async (req: Request, _res: Response, next: NextFunction) => {
    try {
      const id = cookieOf(req);
      const user = id && id.length <= 100 ? await passkeys.session(id) : undefined;
      if (!id || !user) throw new AppError("unauthorized", "sign in to the console first");
      req.console = { user, sessionId: id };
      if (req.method !== "GET" && req.method !== "HEAD" && !csrfMatches(id, req.get("x-csrf-token"))) {
        throw new AppError("forbidden", "missing or wrong X-CSRF-Token");
      }
      next();
    } catch (e) {
      next(e);
    }
  });

  const guard =
    (allowed: (user: ConsoleUser, req: Request) => boolean): RequestHandler =>
    (req, _res, next) => {
      const user = req.console!.user;
      if (allowed(user, req)) return next();
      audit(req, { tenantId: user.tenant_id, userId: user.id, email: user.email, action: `${req.method} ${req.baseUrl}${req.path}`, outcome: "denied" });
      next(new AppError("forbidden", `the ${user.role} role may not do this`));
    };
  const reads = (u: ConsoleUser, req: Request) => req.method === "GET" || u.role !== "viewer" || (req.method === "POST" && READING_POSTS.has(req.path));
  // anyone may end their own sessions
  const ownSessions = (u: ConsoleUser, req: Request) => reads(u, req) || req.path.startsWith("/sign-out");
  const adminOnly = (u: ConsoleUser) => u.role === "admin";
  /** Every change a session makes goes into the audit log once answered (ok or failed). */
  const logged: RequestHandler = (req, res, next) => {
    if (req.method !== "GET") {
      // what the request is, read now (the router sets other params and routes on the way out)
      const u = req.console!.user;
      const entry = {
        tenantId: u.tenant_id,
        env: req.scope?.env,
        userId: u.id,
        email: u.email,
        action: `${req.method} ${req.baseUrl.replace(/^\/console\/api/, "")}${req.route?.path ?? req.path}`,
        target: typeof req.params.id === "string" ? req.params.id : undefined,
      };
      res.on("finish", () => audit(req, { ...entry, outcome: res.statusCode < 400 ? "ok" : "failed" }));
    }
    next();
  };

  const own: RouteDef[] = [
    route({
      ...meta("get", "/me"),
      async handler({ req }) {
        const { user, sessionId } = req.console!;
        return {
          body: { user: userOut(user), tenant: { id: user.tenant_id, name: (await d.tenantName(user.tenant_id)) ?? null }, csrf_token: csrfOf(sessionId) },
        };
      },
    }),
    route({
      ...meta("post", "/sign-out"),
      async handler({ req, res }) {
        await passkeys.endSession(req.console!.sessionId);
        setCookie(res, "", 0);
        return { status: 204 };
      },
    }),
    route({
      ...meta("post", "/sign-out-everywhere"),
      async handler({ req, res }) {
        const ended = await store.endSessionsOf(req.console!.user.id, clock.now());
        setCookie(res, "", 0);
        return { body: { sessions_ended: ended } };
      },
    }),
    route({
      ...meta("get", "/audit"),
      query: Page,
      async handler({ req, query }) {
        const page = query.page ?? 1;
        const lim = query.limit ?? 20;
        const r = await store.auditOf(req.console!.user.tenant_id, page, lim);
        return { body: { data: r.rows.map((a) => ({ ...a, at: iso(a.at as Date) })), pagination: pagination(page, lim, r.total) } };
      },
    }),
  ];
  mount(api, own, () => [guard(ownSessions), logged, d.json]);

  const users: RouteDef[] = [
    route({
      ...meta("get", "/users"),
      query: Page,
      async handler({ req, query }) {
        const page = query.page ?? 1;
        const lim = query.limit ?? 20;
        const r = await store.usersOf(req.console!.user.tenant_id, page, lim);
        return { body: { data: r.rows.map(userOut), pagination: pagination(page, lim, r.total) } };
      },
    }),
    route({
      ...meta("post", "/users"),
      body: z.object({ email: z.string().max(254), role: z.enum(["admin", "developer", "viewer"]) }).strict(),
      async handler({ req, body }) {
        const me = req.console!.user;
        const r = await invite(store, d.config, clock, { tenantId: me.tenant_id, email: body.email, role: body.role, by: me.id });
        return { status: 201, body: { user: userOut(r.user), invite_url: r.inviteUrl, expires_at: iso(r.expiresAt) } };
      },
    }),
    route({
      ...meta("post", "/users/{id}/revoke"),
      params: z.object({ id: z.string().regex(/^cu_[0-9A-HJKMNP-TV-Z]{26}$/) }).strict(),
      async handler({ req, params }) {
        const r = await store.revokeUser(req.console!.user.tenant_id, params.id, clock.now());
        if (!r) throw new AppError("not_found", "console user not found");
        return { body: userOut(r) };
      },
    }),
  ];
  mount(api, users, () => [guard(adminOnly), logged, d.json]);

  // per environment: /console/api/live/… and /console/api/test/…
  const perEnv = express.Router();
  const keys: RouteDef[] = [
    route({
      ...meta("get", "/keys"),
      query: Page,
      async handler({ req, query }) {
        const page = query.page ?? 1;
        const lim = query.limit ?? 20;
        const r = await store.keysOf(req.scope!.tenantId, req.scope!.env, page, lim);
        const data = r.rows.map((k) => ({
          id: k.id,
          prefix: k.key_prefix,
          created_at: iso(k.created_at),
          last_used_at: k.last_used_at ? iso(k.last_used_at) : null,
          revoked_at: k.revoked_at ? iso(k.revoked_at) : null,
        }));
        return { body: { data, pagination: pagination(page, lim, r.total) } };
      },
    }),
    route({
      ...meta("post", "/keys"),
      async handler({ req }) {
        const k = await d.tenants.createKey(req.scope!.tenantId, req.scope!.env);
        return { status: 201, body: { id: k.keyId, key: k.key, prefix: k.key.slice(0, 12) } };
      },
    }),
    route({
      ...meta("post", "/keys/{id}/revoke"),
      params: z.object({ id: z.string().regex(/^key_[0-9A-HJKMNP-TV-Z]{26}$/) }).strict(),
      async handler({ req, params }) {
        if (!(await store.keyIn(req.scope!.tenantId, req.scope!.env, params.id))) throw new AppError("not_found", "API key not found");
        const r = await d.tenants.revokeKey({ keyId: params.id });
        d.keyRevoked();
        return { body: { id: r.keyId, revoked_at: iso(r.revokedAt) } };
      },
    }),
  ];
  mount(perEnv, keys, () => [guard(adminOnly), logged, d.json]);
  mount(perEnv, [...webhookRoutes(d.clients.webhook), timelineRoute(d.clients)], () => [guard(reads), logged, d.json]);
  mount(perEnv, [...insightRoutes(d.clients), ...retentionRoutes(d.clients)], () => [guard(reads), logged, d.json]);
  const offered = d.publicRoutes
    .filter((r) => OFFERED.has(`${r.method} ${r.path}`))
    // /api/v1/verifications → /verifications; /api/v1/me/projects → /projects
    .map((r) => ({ ...r, path: r.path.slice("/api/v1".length).replace(/^\/me\//, "/") }))
    // literal paths before parameterised ones, as the public API mounts them
    .sort((a, b) => Number(a.path.includes("{")) - Number(b.path.includes("{")));
  // a route renamed in the public API must be renamed here too: refuse to start rather than drop it quietly
  const missing = [...OFFERED].filter((o) => !d.publicRoutes.some((r) => `${r.method} ${r.path}` === o && r.handler));
  if (missing.length) throw new Error(`console: no public route for ${missing.join(", ")}`);
  mount(perEnv, offered, () => [guard(reads), logged, d.json]);
  api.use(
    "/:env",
    (req, _res, next) => {
      const env = String(req.params.env);
      if (!ENVS.has(env)) return next(new AppError("not_found", `no route for ${req.method} ${req.originalUrl.split("?")[0]}`));
      req.scope = { tenantId: req.console!.user.tenant_id, env: env as EnvName };
      next();
    },
    perEnv,
  );
  return api;
}

function meta(method: RouteDef["method"], path: string) {
  return { method, path, tag: "Console", summary: path, auth: "public" as const, responses: {} };
}

const userOut = (u: ConsoleUser) => ({
  id: u.id,
  email: u.email,
  role: u.role,
  created_at: iso(u.created_at),
  revoked_at: u.revoked_at ? iso(u.revoked_at) : null,
});
