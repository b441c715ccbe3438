import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * The token in a verification_url's fragment: it lets whoever holds the URL act on that one
 * request (the hosted page) until the request expires. `<expiry in unix milliseconds, base 36>.<mac>`,
 * the MAC an HMAC-SHA256 over the request id and the expiry; it is derived, never stored, so the
 * same URL is answered on every read of the request.
 */
const DOMAIN = "icv-request-token:v1";

const mac = (key: string, requestId: string, exp: number) => createHmac("sha256", key).update(`${DOMAIN}:${requestId}:${exp}`).digest("base64url");

export function createRequestToken(key: string, requestId: string, expiresAt: Date): string {
  const exp = expiresAt.getTime();
  return `${exp.toString(36)}.${mac(key, requestId, exp)}`;
}

export type RequestTokenCheck = { valid: true; expiresAt: Date } | { valid: false; reason: "malformed" | "invalid_signature" | "expired" };

/** Whether `token` was made by this service for `requestId`, and has not expired at `now`. */
export function verifyRequestToken(key: string, requestId: string, token: string, now: Date): RequestTokenCheck {
  const m = /^([0-9a-z]{1,11})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!m) return { valid: false, reason: "malformed" };
  const exp = parseInt(m[1], 36);
  const expected = Buffer.from(mac(key, requestId, exp));
  const given = Buffer.from(m[2]);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { valid: false, reason: "invalid_signature" };
  const expiresAt = new Date(exp);
  if (expiresAt <= now) return { valid: false, reason: "expired" };
  return { valid: true, expiresAt };
}

/** The hosted page's URL of a request: `{PUBLIC_BASE_URL}/verify/{id}#{token}`. */
export const verificationUrl = (publicBaseUrl: string, requestId: string, token: string) => `${publicBaseUrl}/verify/${requestId}#${token}`;
