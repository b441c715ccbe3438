import { createPrivateKey, createPublicKey, generateKeyPair, type KeyObject } from "node:crypto";
import { promisify } from "node:util";
import { calculateJwkThumbprint } from "jose";
import { seal, unseal } from "@icv/platform";
import type { KeyEnv, NewKeyRecord, PublicJwk } from "./store/keys.ts";

export type { KeyEnv, NewKeyRecord, PublicJwk } from "./store/keys.ts";
/** AES-256-GCM with the kid as additional data (the platform's sealed keys). */
export { seal, unseal };

export interface SigningKey {
  kid: string;
  env: KeyEnv;
  privateKey: KeyObject;
  publicKey: KeyObject;
  jwk: PublicJwk;
}

const generate = promisify(generateKeyPair);

/** A new RSA key pair; its kid is the RFC 7638 thumbprint of the public key (stable per key). */
export async function newSigningKey(bits: number, kek: Buffer, env: KeyEnv): Promise<{ key: SigningKey; record: NewKeyRecord }> {
  const { publicKey, privateKey } = await generate("rsa", { modulusLength: bits, publicExponent: 0x10001 });
  const { n, e } = publicKey.export({ format: "jwk" }) as { n: string; e: string };
  const kid = await calculateJwkThumbprint({ kty: "RSA", n, e });
  const jwk: PublicJwk = { kty: "RSA", n, e, alg: "RS256", use: "sig", kid };
  const der = privateKey.export({ format: "der", type: "pkcs8" });
  return { key: { kid, env, privateKey, publicKey, jwk }, record: { kid, env, publicJwk: jwk, privateKeyEnc: seal(der, kek, kid) } };
}

/** Rebuilds a signing key from its stored record. */
export function openSigningKey(kid: string, env: KeyEnv, publicJwk: PublicJwk, privateKeyEnc: string, kek: Buffer): SigningKey {
  const der = unseal(privateKeyEnc, kek, kid);
  return {
    kid,
    env,
    privateKey: createPrivateKey({ key: der, format: "der", type: "pkcs8" }),
    publicKey: publicKeyOf(publicJwk),
    jwk: publicJwk,
  };
}

export const publicKeyOf = (jwk: PublicJwk): KeyObject => createPublicKey({ key: { kty: "RSA", n: jwk.n, e: jwk.e }, format: "jwk" });
