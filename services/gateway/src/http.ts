import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { NextFunction, Request, Response } from "express";
import { z } from "zod";
import { AppError, fromConnectError, isAppError, type ErrorDetail, type Logger, type Scope } from "@icv/platform";
import { ConnectError } from "@connectrpc/connect";

declare module "express-serve-static-core" {
  interface Request {
    requestId: string;
    scope?: Scope;
    keyId?: string;
  }
}

const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{1,64}$/;

/** A sane incoming X-Request-Id, or a new one. */
export function requestIdOf(req: IncomingMessage): string {
  const incoming = req.headers["x-request-id"];
  return typeof incoming === "string" && REQUEST_ID_RE.test(incoming) ? incoming : randomUUID();
}

/** Takes a sane incoming X-Request-Id or makes one, and echoes it on every response. */
export function requestId(req: Request, res: Response, next: NextFunction): void {
  req.requestId = requestIdOf(req);
  res.setHeader("X-Request-Id", req.requestId);
  next();
}

/** zod issues → the details array of the error body. */
export function zodDetails(err: z.ZodError): ErrorDetail[] {
  return err.issues.map((i) => ({
    field: i.path.join(".") || (i.code === "unrecognized_keys" ? ((i as { keys?: string[] }).keys?.join(",") ?? "") : ""),
    message: i.message,
    code: i.code,
  }));
}

/** The answer of an error: its status, the headers it adds (Retry-After, WWW-Authenticate) and the spec's body. */
export function errorReply(err: AppError, requestId: string): { status: number; headers: Record<string, string>; body: unknown } {
  const headers: Record<string, string> = {};
  const retryAfter = err.extra?.retry_after;
  if (retryAfter !== undefined) headers["Retry-After"] = String(retryAfter);
  if (err.code === "unauthorized") headers["WWW-Authenticate"] = 'Bearer realm="icv"';
  return {
    status: err.httpStatus,
    headers,
    body: {
      error: {
        code: err.code,
        message: err.message,
        ...(err.details?.length ? { details: err.details } : {}),
        ...err.extra,
        // the reference SDKs read retryAfter (DECISIONS.md "Compatibility"); retry_after stays
        ...(retryAfter !== undefined ? { retryAfter } : {}),
        request_id: requestId,
      },
    },
  };
}

export function sendError(res: Response, req: Request, err: AppError): void {
  if (res.headersSent) return;
  const r = errorReply(err, req.requestId);
  for (const [k, v] of Object.entries(r.headers)) res.setHeader(k, v);
  res.status(r.status).json(r.body);
}

/** Anything thrown → the spec's error; what is not one of ours or a known parse failure is internal_error. */
export function toAppError(err: unknown): AppError {
  const e = err as { type?: string; status?: number };
  if (isAppError(err)) return err;
  if (err instanceof ConnectError) return fromConnectError(err);
  if (err instanceof z.ZodError) return new AppError("validation_error", "invalid request", { details: zodDetails(err) });
  if (e?.type === "entity.too.large")
    return new AppError("payload_too_large", `request body is larger than ${Math.round(((err as { limit?: number }).limit ?? 10_240) / 1024)} KB`);
  if (e?.type === "entity.parse.failed") return new AppError("validation_error", "request body is not valid JSON");
  if (e?.type === "encoding.unsupported" || e?.type === "charset.unsupported") return new AppError("unsupported_media_type", "unsupported body encoding");
  if (err instanceof URIError || e?.status === 400) return new AppError("validation_error", "malformed request (bad URL or body encoding)");
  return new AppError("internal_error", "internal error");
}

/** Turns anything thrown into the spec's error body; unexpected errors are logged and answered as internal_error. */
export function errorHandler(logger: Logger) {
  return (err: unknown, req: Request, res: Response, _next: NextFunction): void => {
    const app = toAppError(err);
    if (app.code === "internal_error") logger.error({ err, request_id: req.requestId, path: req.path }, "request failed");
    sendError(res, req, app);
  };
}

export function notFound(req: Request, res: Response): void {
  sendError(res, req, new AppError("not_found", `no route for ${req.method} ${req.path}`));
}

/** Bodies must be JSON: a request with a body of another type is 415 before it is parsed. */
export function requireJson(req: Request, _res: Response, next: NextFunction): void {
  const hasBody = Number(req.get("content-length") ?? 0) > 0 || req.get("transfer-encoding") !== undefined;
  if (hasBody && !req.is("application/json")) {
    next(new AppError("unsupported_media_type", "request bodies must be application/json"));
    return;
  }
  next();
}
