// verifyProofOffline: a proof (RS256 JWT) or an SD-JWT VC presentation checked without asking the
// service about it (docs/proofs.md, "Offline" and "For relying parties"): the signature against
// ONE key set (live or test, never both: a test proof does not pass as a live one), the issuer,
// expiry, the `env` claim, key binding where the credential names a holder key, and the Token
// Status List (or, for proofs older than it, the signed revocation list).
import { createHash, createPublicKey, verify as verifySignature, type KeyObject } from "node:crypto";
import { compactVerify, decodeJwt, decodeProtectedHeader, errors, importJWK, jwtVerify, type JWTPayload } from "jose";
import { getListFromStatusListJWT } from "@sd-jwt/jwt-status-list";
import { digest } from "@sd-jwt/crypto-nodejs";
import { SDJwtVcInstance } from "@sd-jwt/sd-jwt-vc";
import { ServiceDocuments, type Env, type Jwk, type SourceOptions } from "./key-sets.ts";

export type ProofFailure =
  | "malformed"
  | "unknown_key"
  | "invalid_signature"
  | "wrong_issuer"
  | "expired"
  | "test_proof"
  | "live_proof"
  | "revoked"
  | "suspended"
  | "unavailable"
  | "holder_binding_required"
  | "holder_binding_invalid";

export type OfflineResult =
  | {
      valid: true;
      format: "jwt" | "sd-jwt-vc";
      env: Env;
      /** The proof's claims; of an SD-JWT VC, with the claims the holder disclosed. */
      claims: Record<string, unknown>;
      /** True when a key-binding JWT by the credential's holder key was checked. */
      holderBinding: boolean;
    }
  | { valid: false; reason: ProofFailure; detail?: string };

export interface VerifyOfflineOptions {
  /** The key set trusted (default live): a test proof fails as live (test_proof), a live one as test (live_proof). */
  env?: Env;
  /** For holder-bound SD-JWT VCs: the audience and the single-use nonce you gave the holder. */
  audience?: string;
  nonce?: string;
  /** The oldest key-binding JWT accepted, in seconds (default 300). */
  maxKeyBindingAgeSeconds?: number;
  /** Clock skew allowed on exp/iat, in seconds (default 60). */
  clockToleranceSeconds?: number;
}

/** The longest token considered (the service refuses validate bodies over 8,192 characters). */
const MAX_TOKEN = 16_384;

class Refused extends Error {
  constructor(
    readonly reason: ProofFailure,
    detail?: string,
  ) {
    super(detail ?? reason);
  }
}

const STATUS: Record<number, ProofFailure> = { 1: "revoked", 2: "suspended" };

/** An offline verifier for one service; its caches (keys 24 h, status 5 min) serve every proof it checks. */
export function createProofVerifier(source: SourceOptions | ServiceDocuments) {
  const docs = source instanceof ServiceDocuments ? source : new ServiceDocuments(source);
  return {
    documents: docs,
    async verify(token: string, opts: VerifyOfflineOptions = {}): Promise<OfflineResult> {
      try {
        if (typeof token !== "string" || token.length === 0 || token.length > MAX_TOKEN) throw new Refused("malformed", "no token, or one over 16 KB");
        return token.includes("~") ? await sdJwtVc(docs, token, opts) : await jwt(docs, token, opts);
      } catch (e) {
        if (e instanceof Refused) return { valid: false, reason: e.reason, detail: e.message };
        return { valid: false, reason: "malformed", detail: e instanceof Error ? e.message : String(e) };
      }
    },
  };
}

const verifiers = new Map<string, ReturnType<typeof createProofVerifier>>();

/** Checks a proof offline against the service at `baseUrl` (one shared verifier, and so one cache, per base URL). */
export function verifyProofOffline(token: string, opts: VerifyOfflineOptions & { baseUrl: string }): Promise<OfflineResult> {
  const key = opts.baseUrl.replace(/\/+$/, "");
  let v = verifiers.get(key);
  if (!v) verifiers.set(key, (v = createProofVerifier({ baseUrl: key })));
  return v.verify(token, opts);
}

/** The key a JWT's header names, from the trusted set only; a kid of the other set says which set it is from. */
async function keyFor(docs: ServiceDocuments, jwt: string, env: Env): Promise<{ kid: string; jwk: Jwk }> {
  let header: { alg?: string; kid?: string };
  try {
    header = decodeProtectedHeader(jwt.split("~")[0]);
  } catch {
    throw new Refused("malformed", "the header does not parse");
  }
  if (header.alg !== "RS256") throw new Refused("invalid_signature", `alg ${header.alg} is not RS256`);
  const kid = String(header.kid ?? "");
  const jwk = (await unavailable(() => docs.keys(env, kid))).find((k) => k.kid === kid);
  if (jwk) return { kid, jwk };
  const other: Env = env === "live" ? "test" : "live";
  const elsewhere = await docs
    .keys(other)
    .then((ks) => ks.some((k) => k.kid === kid))
    .catch(() => false);
  if (elsewhere) throw new Refused(env === "live" ? "test_proof" : "live_proof", `its key is in the ${other} set`);
  throw new Refused("unknown_key", `kid ${kid} is in neither key set`);
}

async function unavailable<T>(load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (e) {
    throw new Refused("unavailable", e instanceof Error ? e.message : String(e));
  }
}

function mapJose(e: unknown): never {
  if (e instanceof Refused) throw e;
  if (e instanceof errors.JWTExpired) throw new Refused("expired");
  if (e instanceof errors.JWSSignatureVerificationFailed) throw new Refused("invalid_signature");
  if (e instanceof errors.JWTClaimValidationFailed && e.claim === "iss") throw new Refused("wrong_issuer");
  throw new Refused("malformed", e instanceof Error ? e.message : String(e));
}

/** The env claim against the set trusted (old test proofs were signed by what is now a live key). */
function checkEnv(payload: JWTPayload, env: Env): void {
  if (payload.env === env) return;
  throw new Refused(payload.env === "test" ? "test_proof" : "live_proof", `env claim ${String(payload.env)}`);
}

/** The state a proof's status list gives it (0 valid); the list is checked against the same key set. */
async function listStatus(docs: ServiceDocuments, env: Env, status: unknown): Promise<number> {
  const ref = (status as { status_list?: { idx?: unknown; uri?: unknown } } | undefined)?.status_list;
  if (typeof ref?.uri !== "string" || !Number.isInteger(ref.idx)) throw new Refused("malformed", "status claim without status_list {idx, uri}");
  const listJwt = await unavailable(() => docs.statusList(ref.uri as string));
  const { jwk } = await unavailable(() => keyFor(docs, listJwt, env));
  await jwtVerify(listJwt, await importJWK(jwk, "RS256"), { typ: "statuslist+jwt", subject: ref.uri, algorithms: ["RS256"] }).catch((e) => {
    throw new Refused("unavailable", `the status list does not verify: ${e instanceof Error ? e.message : e}`);
  });
  return getListFromStatusListJWT(listJwt).getStatus(ref.idx as number);
}

/** Whether the signed revocation list of `env` names the proof (proofs issued before status lists). */
async function inRevocationList(docs: ServiceDocuments, env: Env, proofId: string): Promise<boolean> {
  const jws = await unavailable(() => docs.revocationList(env));
  const { jwk } = await unavailable(() => keyFor(docs, jws, env));
  const { payload } = await compactVerify(jws, await importJWK(jwk, "RS256")).catch(() => {
    throw new Refused("unavailable", "the revocation list's signature does not verify");
  });
  const list = JSON.parse(new TextDecoder().decode(payload)) as { revoked?: { proof_id: string }[] };
  return (list.revoked ?? []).some((r) => r.proof_id === proofId);
}

async function jwt(docs: ServiceDocuments, token: string, opts: VerifyOfflineOptions): Promise<OfflineResult> {
  const env = opts.env ?? "live";
  const { jwk } = await keyFor(docs, token, env);
  const { issuer } = await unavailable(() => docs.metadata("live"));
  const { payload } = await jwtVerify(token, await importJWK(jwk, "RS256"), {
    issuer,
    algorithms: ["RS256"],
    clockTolerance: opts.clockToleranceSeconds ?? 60,
    currentDate: new Date(docs.now()),
  }).catch(mapJose);
  checkEnv(payload, env);
  // a holder-bound proof passes only as a key-bound SD-JWT VC presentation
  if (payload.cnf) throw new Refused("holder_binding_required", "the proof is bound to a holder key: present the SD-JWT VC");
  if (payload.status !== undefined) {
    const state = await listStatus(docs, env, payload.status);
    if (state !== 0) throw new Refused(STATUS[state] ?? "revoked", `status ${state}`);
  } else if (await inRevocationList(docs, env, String(payload.jti ?? payload.sub))) {
    throw new Refused("revoked");
  }
  return { valid: true, format: "jwt", env, claims: payload as Record<string, unknown>, holderBinding: false };
}

const toKey = (jwk: object): KeyObject => createPublicKey({ key: jwk as never, format: "jwk" });

/** A JWS signature over `data` by `key`, for the algorithms the service and holders use. */
function signedBy(alg: string, data: string, sig: string, key: KeyObject): boolean {
  const bytes = Buffer.from(data);
  const signature = Buffer.from(sig, "base64url");
  if (alg === "RS256") return verifySignature("sha256", bytes, key, signature);
  if (alg === "ES256") return verifySignature("sha256", bytes, { key, dsaEncoding: "ieee-p1363" }, signature);
  if (alg === "EdDSA" || alg === "Ed25519") return verifySignature(null, bytes, key, signature);
  return false;
}

const headerAlg = (data: string): string => String((JSON.parse(Buffer.from(data.split(".")[0], "base64url").toString()) as { alg?: string }).alg);

async function sdJwtVc(docs: ServiceDocuments, token: string, opts: VerifyOfflineOptions): Promise<OfflineResult> {
  const env = opts.env ?? "live";
  const issuerJwt = token.split("~")[0];
  const { jwk } = await keyFor(docs, issuerJwt, env);
  const { issuer } = await unavailable(() => docs.metadata(env));
  const { payload } = await jwtVerify(issuerJwt, await importJWK(jwk, "RS256"), {
    issuer,
    typ: "dc+sd-jwt",
    algorithms: ["RS256"],
    clockTolerance: opts.clockToleranceSeconds ?? 60,
    currentDate: new Date(docs.now()),
  }).catch(mapJose);
  checkEnv(payload, env);
  const bound = payload.cnf !== undefined;
  const hasKb = !token.endsWith("~");
  if (bound && (!hasKb || !opts.audience || !opts.nonce)) throw new Refused("holder_binding_required", "a key-binding JWT, an audience and a nonce are needed");
  if (!bound && (opts.audience || opts.nonce)) throw new Refused("holder_binding_required", "binding asked of a credential bound to no key");

  const issuerKey = toKey(jwk);
  const vc = new SDJwtVcInstance({
    hasher: digest,
    hashAlg: "sha-256",
    verifier: (data: string, sig: string) => headerAlg(data) === "RS256" && signedBy("RS256", data, sig, issuerKey),
    kbVerifier: (data: string, sig: string, p: unknown) => {
      const holder = (p as { cnf?: { jwk?: object } }).cnf?.jwk;
      return !!holder && signedBy(headerAlg(data), data, sig, toKey(holder));
    },
    // the status is decided by listStatus (below, with its own checks); the library gets the cached list
    statusListFetcher: (uri: string) => docs.statusList(uri),
    statusVerifier: () => true,
    statusValidator: async () => {},
  });
  // disclosures and the issuer's signature first (malformed), then the status, then the key binding
  const validated = await vc.validate(token).catch((e) => {
    throw new Refused("malformed", e instanceof Error ? e.message : String(e));
  });
  unreferenced(token, payload);
  const state = payload.status === undefined ? 0 : await listStatus(docs, env, payload.status);
  if (state !== 0) throw new Refused(STATUS[state] ?? "revoked", `status ${state}`);
  let claims = validated.payload as Record<string, unknown>;
  if (bound) {
    // (the library reads the status list again: the cached one, checked above)
    const { kb, payload: full } = await vc.verify(token, { keyBindingNonce: opts.nonce, currentDate: Math.floor(docs.now() / 1000) }).catch((e) => {
      throw new Refused("holder_binding_invalid", e instanceof Error ? e.message : String(e));
    });
    const age = Math.abs(docs.now() / 1000 - Number(kb?.payload.iat));
    if (kb?.payload.aud !== opts.audience) throw new Refused("holder_binding_invalid", "the key-binding JWT names another audience");
    if (!(age <= (opts.maxKeyBindingAgeSeconds ?? 300))) throw new Refused("holder_binding_invalid", "the key-binding JWT is stale");
    claims = full as Record<string, unknown>;
  }
  const { _sd: _d, _sd_alg: _a, ...shown } = claims;
  return { valid: true, format: "sd-jwt-vc", env, claims: shown, holderBinding: bound };
}

/** Every digest a payload references (`_sd` arrays and `{"...": digest}` array elements, at any depth). */
function digests(v: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(v)) for (const x of v) digests(x, into);
  else if (v && typeof v === "object") {
    for (const [k, x] of Object.entries(v)) {
      if (k === "_sd" && Array.isArray(x)) for (const d of x) into.add(String(d));
      else if (k === "..." && typeof x === "string") into.add(x);
      else digests(x, into);
    }
  }
  return into;
}

/** Refuses a presentation carrying a disclosure the credential does not reference (as validate does). */
function unreferenced(token: string, payload: JWTPayload): void {
  const parts = token.split("~");
  const disclosures = parts.slice(1, -1).filter(Boolean);
  const known = digests(payload);
  for (const d of disclosures) {
    if (!known.has(createHash("sha256").update(d).digest("base64url"))) throw new Refused("malformed", "a disclosure the credential does not reference");
  }
}

/** The claims of a token without any check (for display; never for a decision). */
export const decodeProof = (token: string) => decodeJwt(token.split("~")[0]);
