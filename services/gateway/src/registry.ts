import type { IRouter, NextFunction, Request, RequestHandler, Response } from "express";
import { z } from "zod";
import { AppError } from "@icv/platform";
import { assertInput } from "./input.ts";

export type Method = "get" | "post" | "put" | "patch" | "delete";

export interface Reply {
  status?: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface Ctx<B, Q, P> {
  req: Request;
  res: Response;
  body: B;
  query: Q;
  params: P;
}

/**
 * One REST endpoint: its HTTP shape (zod schemas, which also generate /api/openapi.json) and
 * its handler. A route with no handler is documented as planned and not mounted.
 */
export interface RouteDef<B = unknown, Q = unknown, P = unknown> {
  method: Method;
  /** OpenAPI style: /api/v1/verifications/{id} */
  path: string;
  tag: string;
  summary: string;
  description?: string;
  auth: "key" | "public";
  body?: z.ZodType<B>;
  query?: z.ZodType<Q>;
  params?: z.ZodType<P>;
  responses: Record<number, { description: string; schema?: z.ZodType; contentType?: string }>;
  handler?: (ctx: Ctx<B, Q, P>) => Promise<Reply>;
}

export const route = <B, Q, P>(def: RouteDef<B, Q, P>): RouteDef => def as unknown as RouteDef;

/** A value checked against a route's schema (body, query or path): the parsed value, or validation_error naming the fields. */
export const parse = <T>(schema: z.ZodType<T> | undefined, value: unknown, where: string): T => {
  if (!schema) return undefined as T;
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  throw new AppError("validation_error", `invalid ${where}`, {
    details: r.error.issues.map((i) => ({
      field: [where, ...i.path].join(".") + (i.code === "unrecognized_keys" ? `.${(i as { keys: string[] }).keys.join(",")}` : ""),
      message: i.message,
      code: i.code,
    })),
  });
};

const NO_QUERY: Record<string, never> = Object.freeze(Object.create(null));

export const expressPath = (p: string) => p.replace(/\{(\w+)\}/g, ":$1");

/** Mounts the routes with handlers; `before(def)` adds per-route middleware (auth, limits, idempotency). */
export function mount(app: IRouter, routes: RouteDef[], before: (def: RouteDef) => RequestHandler[]): void {
  for (const def of routes) {
    if (!def.handler) continue;
    const handler = def.handler;
    app[def.method](expressPath(def.path), ...before(def), async (req: Request, res: Response, next: NextFunction) => {
      try {
        // req.query parses the URL again on every read: once, and not at all without a query string
        const rawQuery = req.url.includes("?") ? req.query : NO_QUERY;
        assertInput(req.params, "path");
        assertInput(rawQuery, "query");
        const body = parse(def.body, req.body ?? (def.body instanceof z.ZodObject ? {} : undefined), "body");
        const query = parse(def.query, rawQuery, "query");
        const params = parse(def.params, req.params, "path");
        const out = await handler({ req, res, body, query, params });
        if (res.headersSent) return;
        for (const [k, v] of Object.entries(out.headers ?? {})) res.setHeader(k, v);
        const status = out.status ?? 200;
        if (out.body === undefined) res.status(status).end();
        else res.status(status).json(out.body);
      } catch (e) {
        next(e);
      }
    });
  }
}
