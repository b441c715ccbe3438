import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

/**
 * A private key at rest (proof signing keys, the transparency log's key): AES-256-GCM under a
 * key-encryption key, base64(iv ‖ tag ‖ ciphertext), with `aad` (the key's id) as additional
 * data so that a record cannot be swapped onto another key.
 */
export function seal(plain: Buffer, kek: Buffer, aad: string): string {
  const iv = randomBytes(12);
  const c = createCipheriv("aes-256-gcm", kek, iv);
  c.setAAD(Buffer.from(aad));
  const body = Buffer.concat([c.update(plain), c.final()]);
  return Buffer.concat([iv, c.getAuthTag(), body]).toString("base64");
}

export function unseal(sealed: string, kek: Buffer, aad: string): Buffer {
  const raw = Buffer.from(sealed, "base64");
  if (raw.length < 28) throw new Error("sealed key is truncated");
  // the tag length is fixed: a shortened tag must never be accepted
  const d = createDecipheriv("aes-256-gcm", kek, raw.subarray(0, 12), { authTagLength: 16 });
  d.setAAD(Buffer.from(aad));
  d.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([d.update(raw.subarray(28)), d.final()]);
}
