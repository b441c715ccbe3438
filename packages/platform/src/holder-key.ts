import { createPublicKey } from "node:crypto";
import { AppError } from "./errors.ts";

/**
 * A holder's public key (DECISIONS.md, SD-JWT VC): EC P-256, Ed25519 or RSA of at least 2048
 * bits, as a JWK without any private member. The proof then carries it as `cnf.jwk` and every
 * presentation needs a key-binding JWT signed by its private half. One check for the
 * verification service (create, request assets: a bad key is refused at once) and the proof
 * service (issue).
 */
export type HolderKey =
  | { kty: "EC"; crv: "P-256"; x: string; y: string; kid?: string }
  | { kty: "OKP"; crv: "Ed25519"; x: string; kid?: string }
  | { kty: "RSA"; n: string; e: string; kid?: string };

/** Members that make a JWK private (RFC 7518 §6.2.2, §6.3.2, §6.4; RFC 8037 §2). */
const PRIVATE_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"];
const MIN_RSA_BITS = 2048;
/** Far above any key in use; keeps a key-binding check cheap. */
const MAX_RSA_BITS = 8192;
const MAX_MEMBER_LENGTH = 2048;

const bad = (message: string) => new AppError("validation_error", `holder_key ${message}`, { details: [{ field: "holder_key", message, code: "invalid" }] });

const text = (jwk: Record<string, unknown>, name: string): string => {
  const v = jwk[name];
  if (typeof v !== "string" || !v || v.length > MAX_MEMBER_LENGTH || !/^[A-Za-z0-9_-]+$/.test(v)) throw bad(`needs ${name} (base64url)`);
  return v;
};

/** The public key the JWK holds, with only its public members; validation_error for anything else. */
export function checkHolderKey(input: unknown): HolderKey {
  if (typeof input !== "object" || input === null || Array.isArray(input)) throw bad("must be a JWK object");
  const jwk = input as Record<string, unknown>;
  const priv = PRIVATE_MEMBERS.filter((m) => m in jwk);
  if (priv.length) throw bad(`must be a public key: it carries the private member${priv.length > 1 ? "s" : ""} ${priv.join(", ")}`);
  const kid = jwk.kid === undefined ? {} : { kid: text(jwk, "kid") };
  let key: HolderKey;
  if (jwk.kty === "EC" && jwk.crv === "P-256") key = { kty: "EC", crv: "P-256", x: text(jwk, "x"), y: text(jwk, "y"), ...kid };
  else if (jwk.kty === "OKP" && jwk.crv === "Ed25519") key = { kty: "OKP", crv: "Ed25519", x: text(jwk, "x"), ...kid };
  else if (jwk.kty === "RSA") key = { kty: "RSA", n: text(jwk, "n"), e: text(jwk, "e"), ...kid };
  else throw bad("must be an EC P-256, Ed25519 (OKP) or RSA key");
  let bits: number | undefined;
  try {
    // the key itself is checked: an EC point on the curve, an Ed25519 key of 32 bytes, an RSA modulus
    const { kid: _, ...material } = key;
    bits = createPublicKey({ key: material, format: "jwk" }).asymmetricKeyDetails?.modulusLength;
  } catch {
    throw bad("is not a valid public key");
  }
  if (key.kty === "RSA" && (!bits || bits < MIN_RSA_BITS || bits > MAX_RSA_BITS)) throw bad(`RSA modulus must be ${MIN_RSA_BITS} to ${MAX_RSA_BITS} bits`);
  return key;
}
