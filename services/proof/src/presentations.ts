/**
 * SD-JWT VC presentations (`issuer-jwt~disclosure~…~[kb-jwt]`) as validate reads them (DECISIONS.md,
 * SD-JWT VC): the issuer-signed JWT by our key sets, each disclosure referenced by exactly one
 * digest of it, and, for a holder-bound credential, the key-binding JWT: `typ: kb+jwt`, signed by
 * the `cnf` key, `aud` and `nonce` as the relying party asked, `iat` within 5 minutes, `sd_hash`
 * over the presentation. Decoding and unpacking are the OWF library's (@sd-jwt/decode).
 */
import { createHash } from "node:crypto";
import { digest } from "@sd-jwt/crypto-nodejs";
import { createHashMapping, decodeSdJwt, splitSdJwt } from "@sd-jwt/decode";
import { importJWK, jwtVerify, type JWK } from "jose";
import type { HolderKey } from "@icv/platform";
import type { SigningKey } from "./keys.ts";
import { canonicalSegments, invalid, verifyProof, type ProofClaims, type TokenProfile, type Verified, type VerifiedTokens } from "./tokens.ts";

/** The claims a credential may disclose (everything else is plain or absent). */
const DISCLOSABLE = ["identifier", "external_user_id"] as const;
/** How far a key-binding JWT's iat may be from now, either way (and how long a (credential, nonce) is remembered). */
export const KB_WINDOW_S = 300;

export interface Disclosed {
  identifier?: string;
  external_user_id?: string;
}

export type CheckedPresentation =
  | {
      valid: true;
      claims: ProofClaims;
      keyEnv: SigningKey["env"];
      disclosed: Disclosed;
      /** A key-binding JWT was checked; `seen` is what the replay record needs. */
      binding?: { credentialSha256: string; nonceSha256: string; expiresAt: Date };
    }
  | Extract<Verified, { valid: false }>;

const hasher = (data: string | ArrayBuffer, alg: string) => digest(data, alg);
const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");

/** The algorithms a holder key of each type may sign a key-binding JWT with. */
const KB_ALGS: Record<HolderKey["kty"], string[]> = { EC: ["ES256"], OKP: ["EdDSA", "Ed25519"], RSA: ["RS256", "PS256"] };

export const isPresentation = (token: string) => token.includes("~");

/**
 * Checks a presentation's signature, disclosures and key binding (status is the caller's next
 * step). `binding`: the relying party's audience and nonce, when it asked for holder binding.
 */
export async function checkPresentation(
  presentation: string,
  profile: TokenProfile,
  keyFor: (kid: string) => Promise<SigningKey | undefined>,
  now: Date,
  verified: VerifiedTokens,
  binding: { audience?: string; nonce?: string },
): Promise<CheckedPresentation> {
  let decoded: Awaited<ReturnType<typeof decodeSdJwt>>;
  let parts: ReturnType<typeof splitSdJwt>;
  try {
    parts = splitSdJwt(presentation);
    decoded = await decodeSdJwt(presentation, hasher);
  } catch {
    return invalid("malformed") as CheckedPresentation;
  }
  const v = await verifyProof(parts.jwt, profile, keyFor, now, verified);
  if (!v.valid) return v;
  const disclosed = await disclosedClaims(decoded, v.claims);
  if (!disclosed) return invalid("malformed") as CheckedPresentation;
  const base = { valid: true as const, claims: v.claims, keyEnv: v.keyEnv, disclosed };
  const holderKey = v.claims.cnf?.jwk;
  const asked = binding.audience !== undefined || binding.nonce !== undefined;
  if (!holderKey) {
    // nothing to bind to: a relying party that asked for binding cannot have it; a stray kb-jwt is refused
    if (asked) return invalid("holder_binding_required") as CheckedPresentation;
    return parts.kbJwt ? (invalid("holder_binding_invalid") as CheckedPresentation) : base;
  }
  if (!parts.kbJwt || binding.audience === undefined || binding.nonce === undefined) return invalid("holder_binding_required") as CheckedPresentation;
  const kb = await checkKeyBinding(
    parts.kbJwt,
    holderKey,
    presentation.slice(0, presentation.length - parts.kbJwt.length),
    binding.audience,
    binding.nonce,
    now,
  );
  if (!kb) return invalid("holder_binding_invalid") as CheckedPresentation;
  return {
    ...base,
    binding: { credentialSha256: sha256(parts.jwt), nonceSha256: sha256(binding.nonce), expiresAt: new Date((kb.iat + KB_WINDOW_S) * 1000) },
  };
}

/** The disclosed claims, or undefined when a disclosure is not one of the credential's (unreferenced, repeated, or of another claim). */
async function disclosedClaims(decoded: Awaited<ReturnType<typeof decodeSdJwt>>, claims: ProofClaims): Promise<Disclosed | undefined> {
  const digests = (claims as { _sd?: unknown })._sd;
  if (!Array.isArray(digests) || (claims as { _sd_alg?: unknown })._sd_alg !== "sha-256") return decoded.disclosures.length ? undefined : {};
  let byDigest: Record<string, { key?: string; value: unknown }>;
  try {
    byDigest = await createHashMapping(decoded.disclosures, { hasher, alg: "sha-256" });
  } catch {
    return undefined;
  }
  if (Object.keys(byDigest).length !== decoded.disclosures.length) return undefined;
  const out: Disclosed = {};
  for (const [d, disclosure] of Object.entries(byDigest)) {
    const key = disclosure.key as (typeof DISCLOSABLE)[number] | undefined;
    if (!digests.includes(d) || !key || !DISCLOSABLE.includes(key) || typeof disclosure.value !== "string" || out[key] !== undefined) return undefined;
    out[key] = disclosure.value;
  }
  return out;
}

/** The key-binding JWT's iat when it holds (signature by the holder key, typ, aud, nonce, iat window, sd_hash), else undefined. */
async function checkKeyBinding(
  kbJwt: string,
  holder: HolderKey,
  presented: string,
  audience: string,
  nonce: string,
  now: Date,
): Promise<{ iat: number } | undefined> {
  if (!canonicalSegments(kbJwt)) return undefined; // one encoding per token (a disclosure has one by its digest)
  try {
    const { kid: _, ...material } = holder;
    const algorithms = KB_ALGS[holder.kty];
    const { payload, protectedHeader } = await jwtVerify(kbJwt, async (header) => importJWK(material as JWK, header.alg), {
      algorithms,
      typ: "kb+jwt",
      audience,
      currentDate: now,
      maxTokenAge: KB_WINDOW_S,
      clockTolerance: 60, // a holder's clock a little ahead; the window below is the rule

      requiredClaims: ["iat", "nonce", "sd_hash"],
    });
    if (!algorithms.includes(protectedHeader.alg)) return undefined;
    const iat = payload.iat as number;
    if (Math.abs(iat - now.getTime() / 1000) > KB_WINDOW_S) return undefined;
    if (payload.nonce !== nonce) return undefined;
    if (payload.sd_hash !== createHash("sha256").update(presented).digest("base64url")) return undefined;
    return { iat };
  } catch {
    // the holder's own token: whatever fails to verify in it (key, algorithm, claims) is a binding that does not hold
    return undefined;
  }
}
