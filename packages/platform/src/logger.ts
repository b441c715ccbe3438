import pino from "pino";

export type Logger = pino.Logger;

/**
 * Fields that must never reach a log line. Pino replaces them with "[redacted]" wherever they
 * appear, down to REDACT_DEPTH levels (e.g. `req.authorization`, `err.params`,
 * `body.client.phone_number`).
 */
const SECRET_KEYS = [
  "authorization",
  "api_key",
  "apiKey",
  "key",
  "token",
  "proof_token",
  "bot_token",
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
  // a database driver's error: the statement's parameters, text and the values it quotes
  "params",
  "parameters",
  "values",
  "query",
  "detail",
];
const REDACT_DEPTH = 4;

/** `k`, `*.k`, `*.*.k`, … for every secret key: pino's wildcards match one level each. */
const redactPaths = SECRET_KEYS.flatMap((k) => Array.from({ length: REDACT_DEPTH }, (_, d) => [...Array<string>(d).fill("*"), k].join(".")));

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
      formatters: { level: (label) => ({ level: label }) },
      serializers: { err: errSerializer },
      redact: { paths: redactPaths, censor: "[redacted]" },
    },
    opts.destination,
  );
}
