import { sign } from "node:crypto";
import { errors, jwtVerify, decodeProtectedHeader } from "jose";
import { BoundedMap, type HolderKey, type ProofMethod } from "@icv/platform";
import type { KeyEnv, SigningKey } from "./keys.ts";

export const PROOF_SCHEMA_VERSION = "1.0";

export interface ProofClaims {
  iss: string;
  sub: string;
  iat: number;
  exp: number;
  jti: string;
  proof_schema_version: string;
  tenant_id: string;
  env: "live" | "test";
  type: string;
  channel: string;
  identifier_hash: string;
  verified_at: string;
  external_user_id?: string;
  /** The reference SDKs' name of external_user_id (the same value). */
  user_id?: string;
  /** How control was shown; every proof issued now carries it (absent only on proofs issued before). */
  method?: ProofMethod;
  /** OAuth sign-ins: hex SHA-256 of `{channel}:{provider user id}` (the account's stable id at the provider). */
  subject_hash?: string;
  /** Token Status List: where its state is published (every proof issued now; absent on older ones). */
  status?: StatusClaim;
  /** A holder-bound proof: only a key-binding JWT of this key presents it (an SD-JWT VC presentation). */
  cnf?: { jwk: HolderKey };
}

/** The `status` claim (draft-ietf-oauth-status-list): the list's uri and the proof's index in it. */
export interface StatusClaim {
  status_list: { idx: number; uri: string };
}

/**
 * RS256 over `data` on libuv's thread pool (node:crypto's callback form: the one-shot form would sign
 * on the thread that serves the requests, 0.5 ms a signature), base64url.
 */
export const rs256 = (data: string, key: SigningKey["privateKey"]): Promise<string> =>
  new Promise((resolve, reject) => sign("sha256", Buffer.from(data), key, (err, sig) => (err ? reject(err) : resolve(sig.toString("base64url")))));

const segment = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url");

/**
 * A compact JWS (RFC 7515) of a JSON payload, RS256 with the key's kid in the header. Built here
 * rather than by jose's SignJWT, which copied the claims (structuredClone) and went through
 * WebCrypto: twice the serving thread's time per signature. tokens.test.ts checks what it makes
 * with jose's verifier.
 */
async function compactJws(key: SigningKey, header: Record<string, string>, payload: unknown): Promise<string> {
  const input = `${segment({ alg: "RS256", ...header, kid: key.kid })}.${segment(payload)}`;
  return `${input}.${await rs256(input, key.privateKey)}`;
}

/** Signs the claims as an RS256 JWT with the key's kid in the header. */
export const signProof = (key: SigningKey, claims: ProofClaims): Promise<string> => compactJws(key, { typ: "JWT" }, claims);

export type InvalidReason =
  | "expired"
  | "revoked"
  | "suspended"
  | "invalid_signature"
  | "malformed"
  | "unknown_key"
  | "identifier_mismatch"
  | "test_proof"
  | "holder_binding_required"
  | "holder_binding_invalid"
  | "identifier_not_disclosed";

/** A verified token: its claims and the set (live or test) of the key that signed it. */
export type Verified = { valid: true; claims: ProofClaims; keyEnv: KeyEnv } | { valid: false; reason: InvalidReason; message: string };

const MESSAGES: Record<InvalidReason, string> = {
  expired: "the proof has expired",
  revoked: "the proof has been revoked",
  suspended: "the proof is suspended: control of the asset could not be confirmed again",
  invalid_signature: "the signature does not verify",
  malformed: "the token is not a well-formed proof",
  unknown_key: "the token was signed by a key this service does not know",
  identifier_mismatch: "the identifier does not match the proof",
  test_proof: "this is a test proof (made with a test key); it is never valid for a live key",
  holder_binding_required: "a key-binding JWT of the holder is required: present the SD-JWT VC with a key-binding JWT over the audience and nonce given",
  holder_binding_invalid: "the key-binding JWT does not verify (holder key, audience, nonce, iat within 5 minutes, sd_hash), or it was presented before",
  identifier_not_disclosed: "the presentation does not disclose the identifier",
};

export const invalid = (reason: InvalidReason): Verified => ({ valid: false, reason, message: MESSAGES[reason] });

/** The longest proof or presentation validate reads (the gateway answers 413 above it). */
export const MAX_TOKEN_LENGTH = 8192;

/**
 * Tokens whose signature, issuer and claims were checked, with what the check answered: a token
 * is immutable and a key never changes under its kid (keys are added and retired, never altered
 * or removed), so the same token verifies the same way again and only the time checks (exp, nbf)
 * are made again on each use. Bounded: at most `max` tokens, least recently used go first
 * (BoundedMap).
 */
export class VerifiedTokens {
  private readonly tokens: BoundedMap<string, { claims: ProofClaims; keyEnv: KeyEnv }>;
  hits = 0;

  constructor(max = 10_000) {
    this.tokens = new BoundedMap(max);
  }

  get(token: string): { claims: ProofClaims; keyEnv: KeyEnv } | undefined {
    const hit = this.tokens.get(token);
    if (hit) this.hits++;
    return hit;
  }

  set(token: string, v: { claims: ProofClaims; keyEnv: KeyEnv }): void {
    this.tokens.set(token, v);
  }

  get size(): number {
    return this.tokens.size;
  }
}

/** jose's time checks of a verified token's claims (no clock tolerance): nbf not after now, exp after now. */
function timeCheck(claims: ProofClaims & { nbf?: number }, now: Date): Verified | undefined {
  const t = Math.floor(now.getTime() / 1000);
  if (claims.nbf !== undefined && claims.nbf > t) return invalid("malformed");
  if (claims.exp <= t) return invalid("expired");
  return undefined;
}

/** What a token of one kind must be: its `typ` (when checked), its issuer per key set, the claims it must hold. */
export interface TokenProfile {
  typ?: string;
  issuer: (keyEnv: KeyEnv) => string;
  requiredClaims: string[];
}

/** The RS256 JWT proof (both key sets sign with the one issuer; typ is not checked, as before). */
export const jwtProfile = (issuer: string): TokenProfile => ({
  issuer: () => issuer,
  requiredClaims: ["sub", "exp", "iat", "type", "channel", "identifier_hash"],
});

/**
 * Checks signature (RS256 only), issuer and expiry; revocation is the caller's next step. With
 * `verified` (a cache of this profile's tokens only), a token checked before skips the signature
 * (see VerifiedTokens) and only its expiry is checked again.
 */
export async function verifyProof(
  token: string,
  profile: TokenProfile,
  keyFor: (kid: string) => Promise<SigningKey | undefined>,
  now: Date,
  verified?: VerifiedTokens,
): Promise<Verified> {
  const known = verified?.get(token);
  if (known) return timeCheck(known.claims, now) ?? { valid: true, claims: known.claims, keyEnv: known.keyEnv };
  const v = await verifyToken(token, profile, keyFor, now);
  if (v.valid) verified?.set(token, { claims: v.claims, keyEnv: v.keyEnv });
  return v;
}

/**
 * Whether every segment of a compact JWS is canonical base64url (RFC 7515 §2): only the URL-safe
 * alphabet, no padding, and the unused bits of the last character zero. So a token has one
 * encoding: `==` appended to a signature, or a last character that decodes to the same bytes,
 * make another string that is not the token.
 */
export function canonicalSegments(token: string): boolean {
  return token.split(".").every((s) => /^[A-Za-z0-9_-]*$/.test(s) && Buffer.from(s, "base64url").toString("base64url") === s);
}

/** A kid as a key of ours can have one (an RFC 7638 thumbprint is 43 characters): never looked up otherwise. */
const KID_SHAPE = /^[A-Za-z0-9._:-]{1,128}$/;

async function verifyToken(token: string, profile: TokenProfile, keyFor: (kid: string) => Promise<SigningKey | undefined>, now: Date): Promise<Verified> {
  if (token.length > MAX_TOKEN_LENGTH || token.split(".").length !== 3 || !canonicalSegments(token)) return invalid("malformed");
  let header: ReturnType<typeof decodeProtectedHeader>;
  try {
    header = decodeProtectedHeader(token);
  } catch {
    return invalid("malformed");
  }
  if (header.alg !== "RS256") return invalid("invalid_signature");
  // the header is the caller's text, hidden in base64 from the gateway's input checks: a kid that
  // no key of ours can have (a NUL, a lone surrogate, a huge string, another type) is never looked up
  if (typeof header.kid !== "string" || !KID_SHAPE.test(header.kid)) return invalid("unknown_key");
  const key = await keyFor(header.kid);
  if (!key) return invalid("unknown_key");
  try {
    const { payload } = await jwtVerify(token, key.publicKey, {
      algorithms: ["RS256"],
      issuer: profile.issuer(key.env),
      typ: profile.typ,
      currentDate: now,
      requiredClaims: profile.requiredClaims,
    });
    return { valid: true, claims: payload as unknown as ProofClaims, keyEnv: key.env };
  } catch (e) {
    if (e instanceof errors.JWTExpired) return invalid("expired");
    if (e instanceof errors.JWSSignatureVerificationFailed) return invalid("invalid_signature");
    return invalid("malformed");
  }
}

/** A compact JWS over a JSON payload (the signed revocation list). */
export const signDocument = (key: SigningKey, payload: unknown): Promise<string> => compactJws(key, {}, payload);
