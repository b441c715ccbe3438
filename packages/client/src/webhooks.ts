// verifyWebhook: checks a delivery's signature over the raw body, before anything reads it, in
// constant time (docs/events-and-webhooks.md, Headers). The service signs every attempt two ways:
// - Standard Webhooks: webhook-id, webhook-timestamp and webhook-signature (`v1,<base64 HMAC-SHA256
//   of "id.timestamp.body">` keyed by the base64 after `whsec_`; two during a rotation); the
//   timestamp must be within the tolerance window, so a captured message cannot be replayed later;
// - X-Service-Signature (and X-Proof-Signature, X-Service-Signature-Previous): the hex HMAC-SHA256
//   of the body keyed by the whole secret string; it signs no time, so it cannot refuse a replay.
import { createHmac, timingSafeEqual } from "node:crypto";
import type { components } from "@icv/client/api";

type Schemas = components["schemas"];
/** A webhook body, as the OpenAPI document's x-webhooks describe them. */
export type WebhookPayload =
  | Schemas["VerificationCompletedWebhook"]
  | Schemas["VerificationSuspendedWebhook"]
  | Schemas["VerificationReinstatedWebhook"]
  | Schemas["VerificationRequestWebhook"];

export type WebhookScheme = "standard-webhooks" | "hmac-hex";

export interface VerifyWebhookOptions {
  /** The endpoint's secret (`whsec_…`); several during a rotation. */
  secret: string | string[];
  /**
   * Which signatures are accepted (default: Standard Webhooks only, which carries the timestamp).
   * Add "hmac-hex" for receivers behind something that drops the webhook-* headers.
   */
  schemes?: WebhookScheme[];
  /** The largest distance between webhook-timestamp and now, in seconds (default 300). */
  toleranceSeconds?: number;
  /** Now, in ms (tests). */
  now?: () => number;
}

export class WebhookVerificationError extends Error {
  override readonly name = "WebhookVerificationError";
}

/** A body larger than this is refused unread (the service's bodies are a few KB). */
const MAX_BODY = 1_048_576;

type HeaderBag = Headers | Record<string, string | string[] | undefined>;

function header(headers: HeaderBag, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const hit = Object.entries(headers).find(([k]) => k.toLowerCase() === name)?.[1];
  return Array.isArray(hit) ? hit[0] : hit;
}

const same = (a: Buffer, b: Buffer) => a.length === b.length && timingSafeEqual(a, b);

/** The HMAC key of the Standard Webhooks scheme: the bytes the part after whsec_ encodes (base64, or the early base64url). */
function standardKey(secret: string): Buffer {
  const encoded = secret.startsWith("whsec_") ? secret.slice(6) : secret;
  return Buffer.from(encoded.replace(/-/g, "+").replace(/_/g, "/"), "base64");
}

function standardWebhooks(body: Buffer, headers: HeaderBag, secrets: string[], opts: VerifyWebhookOptions): boolean {
  const id = header(headers, "webhook-id");
  const ts = header(headers, "webhook-timestamp");
  const sigs = header(headers, "webhook-signature");
  if (!id || !ts || !sigs) return false;
  if (!/^\d{1,12}$/.test(ts)) throw new WebhookVerificationError("webhook-timestamp is not unix seconds");
  const now = (opts.now ?? Date.now)() / 1000;
  if (Math.abs(now - Number(ts)) > (opts.toleranceSeconds ?? 300))
    throw new WebhookVerificationError("webhook-timestamp is outside the tolerance window (a replay, or a clock off)");
  const given = sigs
    .split(" ")
    .filter((s) => s.startsWith("v1,"))
    .map((s) => Buffer.from(s.slice(3), "base64"));
  return secrets.some((secret) => {
    const want = createHmac("sha256", standardKey(secret)).update(`${id}.${ts}.`).update(body).digest();
    return given.some((g) => same(g, want));
  });
}

function hmacHex(body: Buffer, headers: HeaderBag, secrets: string[]): boolean {
  const given = ["x-service-signature", "x-service-signature-previous", "x-proof-signature"]
    .map((h) => header(headers, h))
    .filter((v): v is string => !!v && /^[0-9a-f]{64}$/i.test(v))
    .map((v) => Buffer.from(v.toLowerCase()));
  return secrets.some((secret) => {
    const want = Buffer.from(createHmac("sha256", secret).update(body).digest("hex"));
    return given.some((g) => same(g, want));
  });
}

/**
 * The delivery's body, parsed, once its signature checks out; throws WebhookVerificationError
 * otherwise. `body` must be the raw bytes as received (not re-serialized JSON).
 */
export function verifyWebhook<T = WebhookPayload>(body: string | Uint8Array, headers: HeaderBag, opts: VerifyWebhookOptions): T {
  const secrets = (Array.isArray(opts.secret) ? opts.secret : [opts.secret]).filter((s) => typeof s === "string" && s.length > 0);
  if (!secrets.length) throw new WebhookVerificationError("no webhook secret given");
  const raw = typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body);
  if (raw.length > MAX_BODY) throw new WebhookVerificationError("body over 1 MB");
  const schemes = opts.schemes ?? ["standard-webhooks"];
  const ok =
    (schemes.includes("standard-webhooks") && standardWebhooks(raw, headers, secrets, opts)) ||
    (schemes.includes("hmac-hex") && hmacHex(raw, headers, secrets));
  if (!ok) throw new WebhookVerificationError(`no valid signature (${schemes.join(" or ")})`);
  try {
    return JSON.parse(raw.toString("utf8")) as T;
  } catch {
    throw new WebhookVerificationError("the signed body is not JSON");
  }
}
