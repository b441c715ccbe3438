import { createHash, createHmac, timingSafeEqual } from "node:crypto";

/**
 * The token a session's deep link carries (t.me/<bot>?start=<token>, or in the WhatsApp text):
 * 22 base64url characters (132 bits) derived from the session id with the server key, so it is
 * never stored; a message finds its session by the token's SHA-256 (tokenLookup).
 */
export const sessionToken = (key: string, id: string): string => createHmac("sha256", key).update(`session-token:${id}`).digest("base64url").slice(0, 22);

/** The stored, indexed form of a session token. */
export const tokenLookup = (token: string): string => createHash("sha256").update(token).digest("hex");

/** A session token as it appears in a message (the exact length and alphabet sessionToken makes). */
export const SESSION_TOKEN_RE = /^[A-Za-z0-9_-]{22}$/;

/** The signature in a phone-first session's qr_code URL: the image is not reachable by the session id alone. */
export const qrSignature = (key: string, id: string): string => createHmac("sha256", key).update(`session-qr:${id}`).digest("base64url").slice(0, 22);

/** Constant-time check of a QR URL signature. */
export function qrSignatureValid(key: string, id: string, signature: string): boolean {
  const a = Buffer.from(qrSignature(key, id));
  const b = Buffer.from(signature);
  return a.length === b.length && timingSafeEqual(a, b);
}
