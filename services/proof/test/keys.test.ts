import { createHash, createPublicKey, randomBytes, sign, verify } from "node:crypto";
import { calculateJwkThumbprint } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { newSigningKey, openSigningKey, publicKeyOf, seal, unseal, type NewKeyRecord, type SigningKey } from "../src/keys.ts";

const kek = randomBytes(32);

/** Flips one bit of the sealed blob's byte at `index` (0-11 iv, 12-27 tag, then ciphertext). */
function flip(sealed: string, index: number): string {
  const raw = Buffer.from(sealed, "base64");
  raw[index] ^= 0x01;
  return raw.toString("base64");
}

describe("seal / unseal (AES-256-GCM, kid as additional data)", () => {
  const plain = Buffer.from("private key bytes \u0000\u00ff with binary");

  it("round-trips, with a fresh IV every time", () => {
    const a = seal(plain, kek, "kid-1");
    const b = seal(plain, kek, "kid-1");
    expect(a).not.toBe(b);
    expect(unseal(a, kek, "kid-1").equals(plain)).toBe(true);
    expect(unseal(b, kek, "kid-1").equals(plain)).toBe(true);
    expect(Buffer.from(a, "base64").length).toBe(12 + 16 + plain.length);
  });

  it.each([
    ["iv", 0],
    ["tag", 12],
    ["ciphertext", 28],
    ["last ciphertext byte", 12 + 16 + plain.length - 1],
  ])("throws when the %s was tampered with", (_what, index) => {
    expect(() => unseal(flip(seal(plain, kek, "kid-1"), index), kek, "kid-1")).toThrow();
  });

  it("throws for another kid (a record swapped onto another key) and for another key-encryption key", () => {
    const sealed = seal(plain, kek, "kid-1");
    expect(() => unseal(sealed, kek, "kid-2")).toThrow();
    expect(() => unseal(sealed, randomBytes(32), "kid-1")).toThrow();
  });

  it("throws for a truncated blob", () => {
    const sealed = Buffer.from(seal(plain, kek, "kid-1"), "base64");
    expect(() => unseal(sealed.subarray(0, 20).toString("base64"), kek, "kid-1")).toThrow();
  });

  it("refuses a shortened tag, even the true first bytes of the tag (GCM would accept a prefix)", () => {
    const sealed = Buffer.from(seal(Buffer.alloc(0), kek, "kid-1"), "base64");
    expect(() => unseal(sealed.subarray(0, 16).toString("base64"), kek, "kid-1")).toThrow();
  });
});

describe("newSigningKey", () => {
  let key: SigningKey;
  let record: NewKeyRecord;
  beforeAll(async () => {
    ({ key, record } = await newSigningKey(2048, kek, "live"));
  });

  it("is an RSA 2048 key whose public JWK is {kty, n, e, alg: RS256, use: sig, kid}", () => {
    expect(key.publicKey.asymmetricKeyType).toBe("rsa");
    expect(key.publicKey.asymmetricKeyDetails?.modulusLength).toBe(2048);
    expect(Object.keys(key.jwk).sort()).toEqual(["alg", "e", "kid", "kty", "n", "use"]);
    expect(key.jwk).toMatchObject({ kty: "RSA", e: "AQAB", alg: "RS256", use: "sig", kid: key.kid });
    expect(record.publicJwk).toEqual(key.jwk);
    expect(record.kid).toBe(key.kid);
  });

  it("has kid = the RFC 7638 thumbprint of the public key (jose and a by-hand SHA-256 agree)", async () => {
    const { n, e } = createPublicKey(key.privateKey).export({ format: "jwk" }) as { n: string; e: string };
    expect(key.kid).toBe(await calculateJwkThumbprint({ kty: "RSA", n, e }));
    // RFC 7638: SHA-256 over the required members in lexicographic order, no whitespace, base64url
    const canonical = `{"e":"${e}","kty":"RSA","n":"${n}"}`;
    expect(key.kid).toBe(createHash("sha256").update(canonical).digest("base64url"));
  });

  it("stores the private key only sealed under the kek with its kid, and opens back into a working key", () => {
    const der = unseal(record.privateKeyEnc, kek, record.kid);
    expect(der.equals(key.privateKey.export({ format: "der", type: "pkcs8" }))).toBe(true);
    expect(() => unseal(record.privateKeyEnc, kek, "another-kid")).toThrow();

    const opened = openSigningKey(record.kid, record.env, record.publicJwk, record.privateKeyEnc, kek);
    expect(opened.kid).toBe(key.kid);
    const data = Buffer.from("sign me");
    const sig = sign("sha256", data, opened.privateKey);
    expect(verify("sha256", data, key.publicKey, sig)).toBe(true);
    expect(verify("sha256", data, publicKeyOf(record.publicJwk), sig)).toBe(true);
  });

  it("refuses to open a record under the wrong kek", () => {
    expect(() => openSigningKey(record.kid, record.env, record.publicJwk, record.privateKeyEnc, randomBytes(32))).toThrow();
  });

  it("gives every new key its own kid", async () => {
    const other = await newSigningKey(2048, kek, "live");
    expect(other.key.kid).not.toBe(key.kid);
    expect(other.key.jwk.n).not.toBe(key.jwk.n);
  });
});
