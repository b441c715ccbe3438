/** The random secrets of challenges (codes, record tokens, nonces) and the stored form of a code. */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { pooledRandomBytes } from "@icv/platform";

export const CODE_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
export const CODE_LENGTH = 6;
// the largest multiple of 36 that fits in a byte: bytes at or above it are redrawn (no modulo bias)
const LIMIT = 256 - (256 % CODE_ALPHABET.length);

/** A 6-character code from A-Z0-9, uniformly distributed (CSPRNG + rejection sampling). */
export function generateCode(random: (n: number) => Buffer = pooledRandomBytes): string {
  let out = "";
  while (out.length < CODE_LENGTH) {
    for (const b of random(CODE_LENGTH * 2)) {
      if (b >= LIMIT) continue;
      out += CODE_ALPHABET[b % CODE_ALPHABET.length];
      if (out.length === CODE_LENGTH) break;
    }
  }
  return out;
}

/** The stored form of a code: HMAC-SHA256 bound to the verification id. */
export function codeHmac(key: string, verificationId: string, code: string): string {
  return createHmac("sha256", key).update(`${verificationId}:${code.toUpperCase()}`).digest("hex");
}

/** Constant-time check of a submitted code against the stored HMAC. */
export function codeMatches(key: string, verificationId: string, submitted: string, storedHmac: string): boolean {
  const a = Buffer.from(codeHmac(key, verificationId, submitted), "hex");
  const b = Buffer.from(storedHmac, "hex");
  return a.length === b.length && timingSafeEqual(a, b);
}

/** A random token for public challenges (DNS record, HTTP file): 32 bytes, base64url. */
export const publicToken = (): string => randomBytes(32).toString("base64url");

/** An EIP-4361 nonce: 16 alphanumeric characters. */
export const nonce = (): string => generateCode() + generateCode() + generateCode().slice(0, 4);
