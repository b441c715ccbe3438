import type { IncomingMessage, ServerResponse } from "node:http";
import type { Request } from "express";
import { z } from "zod";
import { tracingEnabled, type Logger } from "@icv/platform";
import { rateHeaders, type KeyAuth } from "./auth.ts";
import { errorReply, requestIdOf, toAppError } from "./http.ts";
import { LIMITS, parseJson } from "./input.ts";
import { recordOnClose } from "./observe.ts";
import type { RateLimiter } from "./rate-limit.ts";
import { expressPath, parse, type RouteDef } from "./registry.ts";

/**
 * The hottest keyed routes, `GET /api/v1/verifications/{id}`, `POST /api/v1/proofs/validate` and
 * the two requests of a test proof (`POST /api/v1/verifications`, `POST /api/v1/verifications/{id}/test-verify`),
 * answered without Express's router and middleware chain. Why: measured on the bench, Express's
 * own per-request work (its request/response prototypes, the walk over the route table, a
 * middleware hop per step, res.json) cost more than everything the two read routes do, and kept
 * both under half the rate of a bare Express hello-world (issue 17's target); on the two writes it
 * was about a tenth of a proof's CPU (issue 33).
 *
 * Same answers: the route's own handler and schemas (from the route table), the same steps in the
 * same order as the Express chain (request id, API key, rate limit, JSON body rules, input checks,
 * handler, JSON answer, errors rendered by the same code) and the same metrics under the same route
 * pattern. It takes only requests it can answer exactly that way, and decides before it counts
 * anything: the canonical path with a well-formed id, no query string, no conditional or
 * idempotency headers, a plain JSON body of known length (validate, create) or no body at all (GET,
 * test-verify), and an API key whose lookup is cached and live. Everything else goes to Express
 * untouched: a first request of a key, a bad key (the failures are counted there), tracing or the
 * debug request log on, any odd request.
 * A refused rate limit is answered here like Express would (a refusal counts nothing).
 * The handlers get a plain ServerResponse: they must not use Express's response API (the
 * test that compares both paths runs them).
 */
export function fastPath(o: {
  routes: RouteDef[];
  auth: KeyAuth;
  limiter: RateLimiter;
  perMinute: number;
  logger: Logger;
}): (req: IncomingMessage, res: ServerResponse) => boolean {
  const find = (method: string, path: string) => {
    const def = o.routes.find((r) => r.method === method && r.path === path && r.handler);
    if (def?.auth !== "key") throw new Error(`fast path: no keyed route ${method} ${path}`);
    return { def, route: expressPath(def.path) };
  };
  const get = find("get", "/api/v1/verifications/{id}");
  const validate = find("post", "/api/v1/proofs/validate");
  const create = find("post", "/api/v1/verifications");
  const testVerify = find("post", "/api/v1/verifications/{id}/test-verify");
  const VERIFICATIONS = "/api/v1/verifications";
  const ONE = `${VERIFICATIONS}/`;
  const TEST_VERIFY = "/test-verify";
  /** The path's id as the route takes it (so no literal route of that path, no %-escapes, no query), or undefined. */
  const idOf = (hot: typeof get, id: string) => {
    const r = hot.def.params!.safeParse({ id });
    return r.success ? r.data : undefined;
  };

  return (req, res) => {
    if (tracingEnabled() || o.logger.isLevelEnabled("debug")) return false;
    const h = req.headers;
    const url = req.url ?? "";
    let hot: typeof get;
    let params: unknown;
    if (req.method === "GET" && url.startsWith(ONE)) {
      if (h["content-length"] !== undefined || h["transfer-encoding"] !== undefined || h["if-none-match"] !== undefined || h["if-modified-since"] !== undefined)
        return false;
      hot = get;
      params = idOf(get, url.slice(ONE.length));
    } else if (req.method === "POST" && h["idempotency-key"] === undefined) {
      if (url === "/api/v1/proofs/validate" || url === VERIFICATIONS) {
        if (!plainJsonBody(h)) return false;
        hot = url === VERIFICATIONS ? create : validate;
      } else if (url.startsWith(ONE) && url.endsWith(TEST_VERIFY)) {
        // no body: none said (or an empty one), as the route takes none
        if ((h["content-length"] ?? "0") !== "0" || h["transfer-encoding"] !== undefined) return false;
        hot = testVerify;
        params = idOf(testVerify, url.slice(ONE.length, -TEST_VERIFY.length));
      } else return false;
    } else return false;
    if (hot.def.params && params === undefined) return false;
    const key = o.auth.peek(h.authorization);
    if (!key) return false;
    serve(req as Request, res, hot.def, hot.route, params, key).catch((err: unknown) => {
      o.logger.error({ err }, "fast path failed");
      res.destroy();
    });
    return true;
  };

  /** `params`: the path parameters as the route's schema parsed them. */
  async function serve(
    req: Request,
    res: ServerResponse,
    def: RouteDef,
    route: string,
    params: unknown,
    key: NonNullable<ReturnType<KeyAuth["peek"]>>,
  ): Promise<void> {
    req.requestId = requestIdOf(req);
    req.scope = { tenantId: key.tenantId, env: key.env };
    req.keyId = key.keyId;
    recordOnClose(req, res, () => route);
    res.setHeader("X-Request-Id", req.requestId);
    try {
      const refused = rateHeaders(res, await o.limiter.consume(`key:${key.keyId}`, o.perMinute));
      if (refused) throw refused;
      const raw = def.body ? parseJson(await readBody(req, Number(req.headers["content-length"]))) : undefined;
      const body = parse(def.body, raw ?? (def.body instanceof z.ZodObject ? {} : undefined), "body");
      const out = await def.handler!({ req, res: res as never, body, query: undefined, params });
      if (res.headersSent) return;
      for (const [k, v] of Object.entries(out.headers ?? {})) res.setHeader(k, v);
      res.statusCode = out.status ?? 200;
      if (out.body === undefined) res.end();
      else sendJson(res, out.body);
    } catch (e) {
      const err = toAppError(e);
      if (err.code === "internal_error") o.logger.error({ err: e, request_id: req.requestId, path: req.url }, "request failed");
      if (res.headersSent) return;
      const r = errorReply(err, req.requestId);
      for (const [k, v] of Object.entries(r.headers)) res.setHeader(k, v);
      res.statusCode = r.status;
      sendJson(res, r.body);
    }
  }
}

/** What res.json sends: the JSON text, as application/json in UTF-8, with its length. */
function sendJson(res: ServerResponse, body: unknown): void {
  const text = JSON.stringify(body);
  res.setHeader("Content-Type", "application/json; charset=utf-8");
  res.setHeader("Content-Length", String(Buffer.byteLength(text)));
  res.end(text);
}

const JSON_TYPE = /^application\/json\s*(?:;\s*charset\s*=\s*"?utf-?8"?\s*)?$/i;

/** A body the JSON middleware would read as is: application/json in UTF-8, a known length within the limit, no content coding. */
function plainJsonBody(h: IncomingMessage["headers"]): boolean {
  const length = Number(h["content-length"]);
  return (
    h["transfer-encoding"] === undefined &&
    h["content-encoding"] === undefined &&
    Number.isInteger(length) &&
    length > 0 &&
    length <= LIMITS.bodyBytes &&
    JSON_TYPE.test(h["content-type"] ?? "")
  );
}

/** The body of a request of known length (the HTTP parser holds it to that length); a request cut short fails as Express answers it. */
function readBody(req: IncomingMessage, length: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let got = 0;
    const cut = () => reject(Object.assign(new Error("request aborted"), { status: 400, type: "request.aborted" }));
    req.on("data", (c: Buffer) => {
      chunks.push(c);
      got += c.length;
    });
    req.once("end", () => (got === length ? resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, got)) : cut()));
    req.once("aborted", cut);
    req.once("error", cut);
  });
}
