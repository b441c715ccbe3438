// The relying party's side of an SD-JWT VC, with the OWF libraries only (@sd-jwt/sd-jwt-vc,
// @sd-jwt/crypto-nodejs) and node:crypto: a verifier that checks a credential against our key set
// and our live status list, and a holder that presents it (with or without the identifier, with
// or without a key-binding JWT). The tests use it as an outside verifier would.
import { createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from "node:crypto";
import { digest } from "@sd-jwt/crypto-nodejs";
import { SDJwtVcInstance } from "@sd-jwt/sd-jwt-vc";

type Jwk = { kid?: string; kty: string; n?: string; e?: string };

const hasher = (data: string | ArrayBuffer, alg: string) => digest(data, alg);

/**
 * An OWF verifier for one key set: RS256 signatures by the kid in the header, the status list
 * fetched by `fetchList` (its JWT checked with the same keys), status 0 required.
 */
export function owfVerifier(
  keys: () => Promise<Jwk[]>,
  fetchList: (uri: string) => Promise<string>,
  kbVerifier?: (data: string, sig: string, payload: unknown) => boolean,
) {
  const verifier = async (data: string, sig: string) => {
    const header = JSON.parse(Buffer.from(data.split(".")[0], "base64url").toString()) as { alg: string; kid: string };
    const jwk = (await keys()).find((k) => k.kid === header.kid);
    if (!jwk || header.alg !== "RS256") return false;
    const key = createPublicKey({ key: { kty: "RSA", n: jwk.n, e: jwk.e }, format: "jwk" });
    return verify("sha256", Buffer.from(data), key, Buffer.from(sig, "base64url"));
  };
  return new SDJwtVcInstance({ hasher, hashAlg: "sha-256", verifier, statusListFetcher: fetchList, kbVerifier: kbVerifier ?? holderKbVerifier });
}

/** The kbVerifier of the OWF library: the key-binding JWT's signature by the credential's cnf.jwk (ES256). */
export function holderKbVerifier(data: string, sig: string, payload: unknown): boolean {
  const jwk = (payload as { cnf?: { jwk: object } }).cnf?.jwk;
  if (!jwk) return false;
  const key = createPublicKey({ key: jwk as never, format: "jwk" });
  return verify("sha256", Buffer.from(data), { key, dsaEncoding: "ieee-p1363" }, Buffer.from(sig, "base64url"));
}

/** A holder with an EC P-256 key: its public JWK (the holder_key) and presentations of a credential. */
export function holder() {
  const { publicKey, privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  return {
    publicJwk: publicKey.export({ format: "jwk" }) as { kty: "EC"; crv: "P-256"; x: string; y: string },
    privateKey,
    present: (credential: string, disclose: { identifier?: boolean; external_user_id?: boolean }, kb?: { aud: string; nonce: string; iat?: number }) =>
      presentWith(privateKey, credential, disclose, kb),
  };
}

/** A presentation of `credential`: the chosen disclosures, and a key-binding JWT signed by `key` when `kb` is given. */
export function presentWith(
  key: KeyObject,
  credential: string,
  disclose: { identifier?: boolean; external_user_id?: boolean },
  kb?: { aud: string; nonce: string; iat?: number },
): Promise<string> {
  const sdjwt = new SDJwtVcInstance({
    hasher,
    hashAlg: "sha-256",
    kbSignAlg: "ES256",
    kbSigner: (data: string) => sign("sha256", Buffer.from(data), { key, dsaEncoding: "ieee-p1363" }).toString("base64url"),
  });
  return sdjwt.present(
    credential,
    disclose,
    kb ? { kb: { payload: { aud: kb.aud, nonce: kb.nonce, iat: kb.iat ?? Math.floor(Date.now() / 1000) } } } : undefined,
  );
}

/** The parts of a compact JWT, decoded (no check). */
export const jwtParts = (jwt: string) => {
  const [h, p] = jwt.split(".");
  return { header: JSON.parse(Buffer.from(h, "base64url").toString()), payload: JSON.parse(Buffer.from(p, "base64url").toString()) };
};
