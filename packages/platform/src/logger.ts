import pino from "pino";
import { activeTraceId } from "./tracing.ts";

export type Logger = pino.Logger;

/**
 * Fields that must never reach a log line, at any depth of a logged object (e.g.
 * `req.authorization`, `err.params`, `body.client.phone_number`): pino `redact` censors them at
 * the top level (a child logger's bindings included), and `scrub` at every level under it. (pino's wildcard
 * paths `*.k`, `*.*.k`… would cost 2 to 5 times a whole log line per level; the walk costs
 * about a microsecond.)
 */
const SECRET_KEYS = [
  "authorization",
  "api_key",
  "apiKey",
  "key",
  "token",
  "proof_token",
  "bot_token",
  "api_secret",
  "apiSecret",
  "access_token",
  "id_token",
  "refresh_token",
  "client_secret",
  "code_verifier",
  "code",
  "challenge_code",
  "code_hash",
  "code_hmac",
  "code_lookup",
  "secret",
  "password",
  "identifier",
  "phone",
  "phone_number",
  "email",
  "deep_link",
  "signature",
  "private_key",
  // a DNS host's API access (domain channel auto)
  "credentials",
  "api_token",
  "access_key_id",
  "secret_access_key",
  // a database driver's error: the statement's parameters, text and the values it quotes
  "params",
  "parameters",
  "values",
  "query",
  "detail",
];
const SECRET = new Set(SECRET_KEYS);
const CENSOR = "[redacted]";

/** A copy of v with every secret key censored at any depth (v itself when nothing is). Errors are left to errSerializer. */
function scrub(v: unknown, depth = 0): unknown {
  if (v === null || typeof v !== "object" || v instanceof Error || depth > 32) return v;
  const list = Array.isArray(v);
  let out: Record<string, unknown> | unknown[] | undefined;
  for (const [k, x] of list ? v.entries() : Object.entries(v)) {
    const y = !list && SECRET.has(k as string) ? CENSOR : scrub(x, depth + 1);
    if (y !== x) {
      out ??= list ? [...v] : { ...(v as Record<string, unknown>) };
      (out as Record<string | number, unknown>)[k] = y;
    }
  }
  return out ?? v;
}

/**
 * Errors are logged by type, message, stack and, for a DatabaseError, code, constraint and
 * statement: never the other members a library hangs on them (pg and PGlite add the
 * statement's parameters).
 */
function errSerializer(e: unknown): unknown {
  if (!(e instanceof Error)) return e;
  const x = e as Error & { code?: unknown; constraint?: unknown; statement?: unknown };
  const out: Record<string, unknown> = { type: e.name, message: e.message, stack: e.stack };
  // not "code": that key is redacted (challenge codes)
  if (e.name === "DatabaseError" && typeof x.statement === "string") {
    out.sqlstate = x.code;
    out.constraint = x.constraint;
    out.statement = x.statement;
  } else if (typeof x.code === "string" || typeof x.code === "number") {
    out.error_code = x.code;
  }
  return out;
}

export function createLogger(opts: { level?: string; name?: string; destination?: pino.DestinationStream } = {}): Logger {
  return pino(
    {
      level: opts.level ?? "info",
      name: opts.name,
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: {
        level: (label) => ({ level: label }),
        log: (o) => scrub(o) as Record<string, unknown>,
      },
      serializers: { err: errSerializer },
      // the active span's trace id (tracing on), to find a log line's trace and a trace's log lines
      mixin: () => {
        const id = activeTraceId();
        return id ? { trace_id: id } : {};
      },
      redact: { paths: SECRET_KEYS, censor: CENSOR },
    },
    opts.destination,
  );
}
