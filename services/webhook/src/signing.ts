import { createHmac, randomBytes } from "node:crypto";

const PREFIX = "whsec_";

/** A new webhook secret: `whsec_` + standard base64 of 32 random bytes (the Standard Webhooks form). */
export const newWebhookSecret = (): string => `${PREFIX}${randomBytes(32).toString("base64")}`;

/**
 * The Standard Webhooks HMAC key: the bytes the part after `whsec_` encodes. Secrets issued
 * before the switch to standard base64 are base64url; Node's base64 decoder reads both alphabets.
 */
export const standardKey = (secret: string): Buffer => Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, "base64");

/**
 * `X-Service-Signature`: lower-case hex HMAC-SHA256 of the raw body. The key is the whole secret
 * string as UTF-8 text, prefix included (`whsec_…`), exactly as the tenant was given it.
 */
export const serviceSignature = (body: string, secret: string): string => createHmac("sha256", secret).update(body).digest("hex");

/** One Standard Webhooks signature: `v1,` + base64 HMAC-SHA256 of `id.timestamp.body`. */
export const standardSignature = (id: string, timestamp: number, body: string, secret: string): string =>
  `v1,${createHmac("sha256", standardKey(secret)).update(`${id}.${timestamp}.${body}`).digest("base64")}`;

export interface SigningSecrets {
  current: string;
  /** The secret before the last rotation, while it still signs. */
  previous?: string;
}

/**
 * The signature headers of one attempt: the Standard Webhooks trio (with a signature per live
 * secret, space-separated) and X-Service-Signature (plus X-Service-Signature-Previous during a
 * rotation's overlap). X-Proof-Signature carries the same value as X-Service-Signature: the name
 * the reference product's SDKs check.
 */
export function signatureHeaders(id: string, timestamp: number, body: string, secrets: SigningSecrets): Record<string, string> {
  const all = secrets.previous ? [secrets.current, secrets.previous] : [secrets.current];
  const service = serviceSignature(body, secrets.current);
  return {
    "webhook-id": id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": all.map((s) => standardSignature(id, timestamp, body, s)).join(" "),
    "x-service-signature": service,
    "x-proof-signature": service,
    ...(secrets.previous ? { "x-service-signature-previous": serviceSignature(body, secrets.previous) } : {}),
  };
}
