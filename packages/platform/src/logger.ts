import pino from "pino";

export type Logger = pino.Logger;

/**
 * Fields that must never reach a log line. Pino replaces them with "[redacted]" wherever they
 * appear at the top level or one level down (e.g. `req.authorization`, `body.challenge_code`).
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
  "secret",
  "password",
  "identifier",
  "phone_number",
  "signature",
  "private_key",
];

export function createLogger(opts: { level?: string; name?: string; destination?: pino.DestinationStream } = {}): Logger {
  return pino(
    {
      level: opts.level ?? "info",
      name: opts.name,
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: [...SECRET_KEYS, ...SECRET_KEYS.map((k) => `*.${k}`)], censor: "[redacted]" },
    },
    opts.destination,
  );
}
