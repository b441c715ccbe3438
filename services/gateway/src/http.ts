import { randomUUID } from "node:crypto";
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

/** Takes a sane incoming X-Request-Id or makes one, and echoes it on every response. */
export function requestId(req: Request, res: Response, next: NextFunction): void {
  const incoming = req.get("x-request-id");
  req.requestId = incoming && REQUEST_ID_RE.test(incoming) ? incoming : randomUUID();
  res.setHeader("X-Request-Id", req.requestId);
  next();
}

/** zod issues → the details array of the error body. */
export function zodDetails(err: z.ZodError): ErrorDetail[] {
  return err.issues.map((i) => ({
    field: i.path.join(".") || (i.code === "unrecognized_keys" ? (i as { keys?: string[] }).keys?.join(",") ?? "" : ""),
    message: i.message,
    code: i.code,
  }));
}

export function sendError(res: Response, req: Request, err: AppError): void {
  if (res.headersSent) return;
  const retryAfter = err.extra?.retry_after;
  if (retryAfter !== undefined) res.setHeader("Retry-After", String(retryAfter));
  if (err.code === "unauthorized") res.setHeader("WWW-Authenticate", 'Bearer realm="icv"');
  res.status(err.httpStatus).json({
    error: { code: err.code, message: err.message, ...(err.details?.length ? { details: err.details } : {}), ...err.extra, request_id: req.requestId },
  });
}

/** Turns anything thrown into the spec's error body; unexpected errors are logged and answered as internal_error. */
export function errorHandler(logger: Logger) {
  return (err: unknown, req: Request, res: Response, _next: NextFunction): void => {
    let app: AppError;
    const e = err as { type?: string; status?: number };
    if (isAppError(err)) app = err;
    else if (err instanceof ConnectError) app = fromConnectError(err);
    else if (err instanceof z.ZodError) app = new AppError("validation_error", "invalid request", { details: zodDetails(err) });
    else if (e?.type === "entity.too.large") app = new AppError("payload_too_large", `request body is larger than ${Math.round(((err as { limit?: number }).limit ?? 10_240) / 1024)} KB`);
    else if (e?.type === "entity.parse.failed") app = new AppError("validation_error", "request body is not valid JSON");
    else if (e?.type === "encoding.unsupported" || e?.type === "charset.unsupported") app = new AppError("unsupported_media_type", "unsupported body encoding");
    else if (err instanceof URIError || e?.status === 400) app = new AppError("validation_error", "malformed request (bad URL or body encoding)");
    else app = new AppError("internal_error", "internal error");
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
