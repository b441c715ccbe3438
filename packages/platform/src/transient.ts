import { AppError } from "./errors.ts";

/**
 * Database errors that say "not now" rather than "never": the server is restarting, a
 * connection broke, a failover is under way, a transaction lost a serialization race. They
 * answer 503 `service_unavailable` with Retry-After; nothing else about them is logged as a bug.
 */
const TRANSIENT_SQLSTATE = /^(08...|57P0[123]|53300|40001|40P01|55P03)$/;
/** Serialization failure and deadlock: the whole transaction may simply run again. */
export const RETRYABLE_SQLSTATE = /^(40001|40P01)$/;
const TRANSIENT_NODE = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN"]);
// pg's own errors of a lost or never-made connection, or of a query left unanswered (query_timeout), carry no code
const TRANSIENT_MESSAGE =
  /^(Connection terminated|Client has encountered a connection error|timeout exceeded when trying to connect|Connection terminated due to connection timeout|Query read timeout)/;

/** Whether a driver's error (pg, node's net, PGlite) is a passing outage of the database. */
export function isTransientDbError(e: unknown): boolean {
  if (e instanceof DatabaseUnavailableError) return true;
  const x = e as { code?: unknown; message?: unknown; errors?: unknown } | undefined;
  if (!x || typeof x !== "object") return false;
  if (typeof x.code === "string" && (TRANSIENT_SQLSTATE.test(x.code) || TRANSIENT_NODE.has(x.code))) return true;
  // an AggregateError of connect attempts (IPv4 and IPv6 both refused)
  if (Array.isArray(x.errors) && x.errors.length && x.errors.every(isTransientDbError)) return true;
  return typeof x.message === "string" && TRANSIENT_MESSAGE.test(x.message);
}

/** Seconds a client is told to wait (Retry-After) after a transient database error. */
export const DB_RETRY_AFTER_S = 1;

/** The database is away for now: 503 `service_unavailable` with Retry-After, over REST and RPC alike. */
export class DatabaseUnavailableError extends AppError {
  /** SQLSTATE or node error code of the cause (for logs; never the server's message). */
  readonly reason: string;
  constructor(cause: unknown) {
    super("service_unavailable", "the database is unavailable; retry later", { extra: { retry_after: DB_RETRY_AFTER_S } });
    this.name = "DatabaseUnavailableError";
    const c = cause as { code?: unknown; message?: unknown } | undefined;
    this.reason = typeof c?.code === "string" ? c.code : c?.message === "Query read timeout" ? "query_timeout" : "connection";
  }
}
