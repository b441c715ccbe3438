import type { IncomingMessage, ServerResponse } from "node:http";
import type { Request, RequestHandler } from "express";
import { httpDuration, httpRequests, httpServerSpan, tracingEnabled } from "@icv/platform";

/** The matched route's pattern (`/api/v1/verifications/:id`), never the raw path; "unmatched" when no route took the request. */
const routeOf = (req: Request): string => (req.route?.path ? `${req.baseUrl}${String(req.route.path)}` : "unmatched");

/**
 * RED metrics of every request (icv_http_requests_total, icv_http_request_duration_seconds by
 * method, route pattern and status code) and, tracing on, its server span: the root of the
 * trace that follows the request through every RPC into SQL. Recorded when the response closes
 * (event streams: when the stream ends).
 */
export const observeHttp: RequestHandler = (req, res, next) => {
  const end = recordOnClose(req, res, () => routeOf(req));
  if (tracingEnabled()) end.span = httpServerSpan(req.method, req.headers, next);
  else next();
};

/** Counts and times one request when its response closes, under the route `route()` names then. */
export function recordOnClose(req: IncomingMessage, res: ServerResponse, route: () => string): { span?: (route: string, status: number) => void } {
  const start = performance.now();
  const end: { span?: (route: string, status: number) => void } = {};
  res.once("close", () => {
    const r = route();
    const labels = { service: "gateway", method: req.method!, route: r, code: String(res.statusCode) };
    httpRequests.inc(labels);
    httpDuration.observe(labels, (performance.now() - start) / 1000);
    end.span?.(r, res.statusCode);
  });
  return end;
}
