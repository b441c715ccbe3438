import { randomUUID } from "node:crypto";
import type { Duplex } from "node:stream";
import express, { type NextFunction, type Request, type Response } from "express";
import { z } from "zod";
import { AppError, ID_PREFIXES, type IdKind } from "@icv/platform";

/**
 * The input rules of every route, applied once at the edge (DECISIONS "Bad input"): a caller's
 * mistake is a 400 validation_error naming the field, never a 5xx further in.
 * - strings (JSON keys and values, path params, query values) hold no U+0000 and no lone
 *   surrogate (well-formed UTF-16);
 * - JSON bodies are UTF-8, an object or array at the top, no duplicate keys, at most LIMITS.depth
 *   levels deep, LIMITS.keys keys per object and LIMITS.items items per array, and numbers are
 *   finite safe integers or fractions within ±2^53;
 * - percent-encoding in the query string is well formed and decodes to UTF-8;
 * - ids match their prefix and a ULID; timestamps are ISO 8601 in the years 1970 to 9999.
 */
export const LIMITS = { depth: 10, keys: 50, items: 100, bodyBytes: 10 * 1024 } as const;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why a string may not pass, or undefined. */
function badString(s: string): string | undefined {
  if (s.includes("\0")) return "must not contain the NUL character (U+0000)";
  if (LONE_SURROGATE.test(s)) return "must be well-formed Unicode (no lone surrogate)";
  return undefined;
}

interface Problem {
  path: (string | number)[];
  message: string;
  code: string;
}

/** The first value that breaks the rules above, walking `value` (parsed JSON, params or query). */
export function inputProblem(value: unknown, path: (string | number)[] = [], depth = 0): Problem | undefined {
  if (typeof value === "string") {
    const why = badString(value);
    return why ? { path, message: why, code: "invalid_string" } : undefined;
  }
  if (typeof value === "number") {
    if (!Number.isFinite(value) || Math.abs(value) > Number.MAX_SAFE_INTEGER) {
      return { path, message: `numbers must be finite and within ±${Number.MAX_SAFE_INTEGER}`, code: "too_big" };
    }
    return undefined;
  }
  if (value === null || typeof value !== "object") return undefined;
  if (depth + 1 > LIMITS.depth) return { path, message: `JSON may be at most ${LIMITS.depth} levels deep`, code: "too_deep" };
  if (Array.isArray(value)) {
    if (value.length > LIMITS.items) return { path, message: `arrays may hold at most ${LIMITS.items} items`, code: "too_big" };
    for (let i = 0; i < value.length; i++) {
      const p = inputProblem(value[i], [...path, i], depth + 1);
      if (p) return p;
    }
    return undefined;
  }
  const keys = Object.keys(value);
  if (keys.length > LIMITS.keys) return { path, message: `objects may hold at most ${LIMITS.keys} keys`, code: "too_big" };
  for (const k of keys) {
    const why = badString(k);
    if (why) return { path, message: `keys ${why}`, code: "invalid_key" };
    const p = inputProblem((value as Record<string, unknown>)[k], [...path, k], depth + 1);
    if (p) return p;
  }
  return undefined;
}

/** Throws validation_error for the first problem in `value`, its field prefixed with `where`. */
export function assertInput(value: unknown, where: "body" | "query" | "path"): void {
  const p = inputProblem(value);
  if (p)
    throw new AppError("validation_error", `invalid ${where}`, {
      details: [{ field: [where, ...p.path].join("."), message: p.message, code: p.code }],
    });
}

/** The characters duplicateKey stops at: the rest is skipped by the regular expression engine. */
const STRUCTURE = /["{}[\],]/g;

/** The closing quote of the JSON string whose opening quote is at `open` (one escaped by an odd run of backslashes is inside it). */
function closingQuote(text: string, open: number): number {
  let j = text.indexOf('"', open + 1);
  for (;;) {
    let k = j - 1;
    while (text.charCodeAt(k) === 92) k--; // backslashes before it
    if ((j - 1 - k) % 2 === 0) return j;
    j = text.indexOf('"', j + 1);
  }
}

/**
 * The path of the first duplicate key in a JSON text (JSON.parse keeps the last one silently).
 * The text must already have parsed.
 */
export function duplicateKey(text: string): string[] | undefined {
  const stack: { keys?: Set<string>; at: string }[] = [];
  let expectKey = false;
  STRUCTURE.lastIndex = 0;
  for (let m = STRUCTURE.exec(text); m; m = STRUCTURE.exec(text)) {
    const i = m.index;
    const c = text[i];
    if (c === '"') {
      const j = closingQuote(text, i);
      const top = stack.at(-1);
      if (top?.keys && expectKey) {
        const key = JSON.parse(text.slice(i, j + 1)) as string;
        if (top.keys.has(key)) return [...stack.slice(0, -1).map((s) => s.at), key];
        top.keys.add(key);
        top.at = key;
        expectKey = false;
      }
      STRUCTURE.lastIndex = j + 1;
    } else if (c === "{") {
      stack.push({ keys: new Set(), at: "" });
      expectKey = true;
    } else if (c === "[") stack.push({ at: "0" });
    else if (c === "}" || c === "]") stack.pop();
    else {
      const top = stack.at(-1);
      if (top?.keys) expectKey = true;
      else if (top) top.at = String(Number(top.at) + 1);
    }
  }
  return undefined;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });
const readBody = express.raw({ type: "application/json", limit: LIMITS.bodyBytes });

/**
 * JSON bodies: read raw (limit, Content-Encoding as body-parser does), then UTF-8, JSON, no
 * duplicate keys, and the string, number and shape rules. `req.body` is the parsed value.
 */
export function jsonBody(req: Request, res: Response, next: NextFunction): void {
  const charset = req.is("application/json") ? /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(req.get("content-type") ?? "")?.[1] : undefined;
  if (charset && charset.toLowerCase() !== "utf-8" && charset.toLowerCase() !== "utf8") {
    next(new AppError("unsupported_media_type", `unsupported charset ${charset.slice(0, 32)}: send UTF-8`));
    return;
  }
  readBody(req, res, (err?: unknown) => {
    if (err) return next(err);
    if (!Buffer.isBuffer(req.body)) {
      req.body = undefined;
      return next();
    }
    try {
      req.body = parseJson(req.body);
      next();
    } catch (e) {
      next(e);
    }
  });
}

/** A JSON body (UTF-8, no duplicate keys, the input rules): its value, or the validation_error of the first problem. */
export function parseJson(buf: Buffer): unknown {
  let text: string;
  try {
    text = utf8.decode(buf);
  } catch {
    throw new AppError("validation_error", "request body is not valid UTF-8");
  }
  if (!text.trim()) return undefined;
  if (!/^\s*[{[]/.test(text)) throw new AppError("validation_error", "request body must be a JSON object");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new AppError("validation_error", "request body is not valid JSON");
  }
  const dup = duplicateKey(text);
  if (dup) {
    throw new AppError("validation_error", "invalid body", {
      details: [{ field: ["body", ...dup].join("."), message: "duplicate key", code: "duplicate_key" }],
    });
  }
  assertInput(value, "body");
  return value;
}

/** Each `name=value` of the raw query string must be well-formed percent-encoded UTF-8 (querystring would guess). */
export function queryEncoding(req: Request, _res: Response, next: NextFunction): void {
  const q = req.url.indexOf("?");
  if (q < 0) return next();
  for (const pair of req.url.slice(q + 1).split("&")) {
    const [name, ...rest] = pair.split("=");
    const decode = (s: string) => decodeURIComponent(s.replace(/\+/g, " "));
    let field = name;
    try {
      field = decode(name);
      decode(rest.join("="));
    } catch {
      const shown = /^[\w.-]{1,64}$/.test(field) ? field : "";
      next(
        new AppError("validation_error", "invalid query", {
          details: [{ field: `query${shown ? `.${shown}` : ""}`, message: "malformed percent-encoding (must be UTF-8)", code: "invalid_encoding" }],
        }),
      );
      return;
    }
  }
  next();
}

const ULID = "[0-9A-HJKMNP-TV-Z]{26}";

/** An id of one of these kinds: its prefix and a ULID (checked before any lookup). */
export function idOf(...kinds: IdKind[]) {
  const prefixes = kinds.map((k) => ID_PREFIXES[k]);
  return z.string().regex(new RegExp(`^(?:${prefixes.join("|")})_${ULID}$`), `must be an id of the form ${prefixes.map((p) => `${p}_…`).join(" or ")}`);
}

/** `{id}` path params of these kinds. */
export const idParams = (...kinds: IdKind[]) => z.object({ id: idOf(...kinds) });

/** An ISO 8601 timestamp with offset, in the years 1970 to 9999 (what Postgres and protobuf both hold). */
export const timestampParam = z.iso.datetime({ offset: true }).refine((v) => {
  const year = new Date(v).getUTCFullYear();
  return year >= 1970 && year <= 9999;
}, "must be a timestamp in the years 1970 to 9999");

/**
 * Requests Node's HTTP parser refuses before Express sees them (headers over 16 KB, a NUL or a
 * bad byte in a header, a broken request line, headers or a body that stopped arriving: 408)
 * still get the error shape.
 */
export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  if (!socket.writable || err.code === "ECONNRESET") {
    socket.destroy();
    return;
  }
  const tooLarge = err.code === "HPE_HEADER_OVERFLOW";
  const timedOut = err.code === "ERR_HTTP_REQUEST_TIMEOUT";
  const id = randomUUID();
  const body = JSON.stringify({
    error: {
      code: timedOut ? "request_timeout" : "validation_error",
      message: timedOut
        ? "the request did not arrive in time (headers and body)"
        : tooLarge
          ? "request headers are larger than 16 KB"
          : "malformed HTTP request",
      request_id: id,
    },
  });
  const status = timedOut ? "408 Request Timeout" : tooLarge ? "431 Request Header Fields Too Large" : "400 Bad Request";
  socket.end(
    `HTTP/1.1 ${status}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${id}\r\nConnection: close\r\n\r\n${body}`,
  );
}
