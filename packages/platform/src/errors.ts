import { Code, ConnectError } from "@connectrpc/connect";

/** Every error code of the spec and of DECISIONS.md, with its HTTP status and Connect code. */
export const ERROR_CODES = {
  validation_error: { http: 400, connect: Code.InvalidArgument },
  invalid_identifier: { http: 400, connect: Code.InvalidArgument },
  invalid_channel_for_type: { http: 400, connect: Code.InvalidArgument },
  challenge_expired: { http: 400, connect: Code.FailedPrecondition },
  invalid_code: { http: 400, connect: Code.InvalidArgument },
  max_attempts_exceeded: { http: 400, connect: Code.FailedPrecondition },
  channel_unavailable: { http: 400, connect: Code.FailedPrecondition },
  resend_not_supported: { http: 400, connect: Code.FailedPrecondition },
  invalid_signature: { http: 400, connect: Code.InvalidArgument },
  unauthorized: { http: 401, connect: Code.Unauthenticated },
  forbidden: { http: 403, connect: Code.PermissionDenied },
  test_mode_required: { http: 403, connect: Code.PermissionDenied },
  not_found: { http: 404, connect: Code.NotFound },
  invalid_state: { http: 409, connect: Code.FailedPrecondition },
  request_timeout: { http: 408, connect: Code.DeadlineExceeded },
  payload_too_large: { http: 413, connect: Code.InvalidArgument },
  unsupported_media_type: { http: 415, connect: Code.InvalidArgument },
  idempotency_conflict: { http: 422, connect: Code.AlreadyExists },
  rate_limited: { http: 429, connect: Code.ResourceExhausted },
  resend_too_soon: { http: 429, connect: Code.ResourceExhausted },
  too_many_connections: { http: 429, connect: Code.ResourceExhausted },
  internal_error: { http: 500, connect: Code.Internal },
  service_unavailable: { http: 503, connect: Code.Unavailable },
  // smart reuse (README "Smart reuse")
  no_existing_proof: { http: 404, connect: Code.NotFound },
  proof_too_old: { http: 422, connect: Code.FailedPrecondition },
  already_verified: { http: 409, connect: Code.FailedPrecondition },
  request_expired: { http: 410, connect: Code.FailedPrecondition },
} as const satisfies Record<string, { http: number; connect: Code }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface ErrorDetail {
  field: string;
  message: string;
  code: string;
}

/** Extra members that travel with an error to the REST body (e.g. attempts_remaining, retry_after). */
export type ErrorExtra = Record<string, string | number | boolean>;

/** A domain error carrying a spec error code. Thrown by domain code, mapped once at each edge. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly details?: ErrorDetail[];
  readonly extra?: ErrorExtra;

  constructor(code: ErrorCode, message: string, opts: { details?: ErrorDetail[]; extra?: ErrorExtra } = {}) {
    super(message);
    this.name = "AppError";
    this.code = code;
    this.details = opts.details;
    this.extra = opts.extra;
  }

  get httpStatus(): number {
    return ERROR_CODES[this.code].http;
  }
}

export const isAppError = (e: unknown): e is AppError => e instanceof AppError;

const CODE_HEADER = "icv-error-code";
const EXTRA_HEADER = "icv-error-extra";

/** Domain error → ConnectError, keeping the spec code and extras in trailing metadata. */
export function toConnectError(err: unknown): ConnectError {
  if (err instanceof ConnectError) return err;
  if (isAppError(err)) {
    const meta = new Headers({ [CODE_HEADER]: err.code });
    if (err.details || err.extra) {
      // base64url: header values must be Latin-1, messages and details may hold any character
      meta.set(EXTRA_HEADER, Buffer.from(JSON.stringify({ details: err.details, extra: err.extra })).toString("base64url"));
    }
    return new ConnectError(err.message, ERROR_CODES[err.code].connect, meta);
  }
  return new ConnectError("internal error", Code.Internal, new Headers({ [CODE_HEADER]: "internal_error" }));
}

const FALLBACK_BY_CONNECT: Partial<Record<Code, ErrorCode>> = {
  [Code.InvalidArgument]: "validation_error",
  [Code.NotFound]: "not_found",
  [Code.Unauthenticated]: "unauthorized",
  [Code.PermissionDenied]: "forbidden",
  [Code.FailedPrecondition]: "invalid_state",
  [Code.ResourceExhausted]: "rate_limited",
  [Code.Unavailable]: "service_unavailable",
  [Code.Canceled]: "service_unavailable",
  [Code.DeadlineExceeded]: "service_unavailable",
};

/** ConnectError (from an RPC) → domain error, so callers and the gateway see the spec code again. */
export function fromConnectError(err: unknown): AppError {
  if (isAppError(err)) return err;
  const ce = ConnectError.from(err);
  if (isAppError(ce.cause)) return ce.cause;
  const code = ce.metadata.get(CODE_HEADER);
  const known = code && code in ERROR_CODES ? (code as ErrorCode) : (FALLBACK_BY_CONNECT[ce.code] ?? "internal_error");
  let details: ErrorDetail[] | undefined;
  let extra: ErrorExtra | undefined;
  const raw = ce.metadata.get(EXTRA_HEADER);
  if (raw) {
    try {
      ({ details, extra } = JSON.parse(Buffer.from(raw, "base64url").toString("utf8")));
    } catch {
      // a malformed extra header only loses the extras, never the error itself
    }
  }
  const message = known === "internal_error" ? "internal error" : known === "service_unavailable" && !code ? "a backing service is unavailable" : ce.rawMessage;
  return new AppError(known, message, { details, extra });
}
