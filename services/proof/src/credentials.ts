/**
 * The SD-JWT VC (RFC 9901 with draft-ietf-oauth-sd-jwt-vc) issued beside the JWT when a tenant
 * asks for it, with the OWF library (@sd-jwt/sd-jwt-vc). Same key sets as the JWT: the test
 * issuer is the issuer + `/test`, so a test credential never passes for a live one.
 */
import { digest } from "@sd-jwt/crypto-nodejs";
import { SDJwtVcInstance } from "@sd-jwt/sd-jwt-vc";
import { pooledRandomBytes, type HolderKey } from "@icv/platform";
import type { KeyEnv, SigningKey } from "./keys.ts";
import { rs256, type StatusClaim, type TokenProfile } from "./tokens.ts";

export const SD_JWT_VC_TYP = "dc+sd-jwt";
/** Where the credential type's metadata is served (the `vct`). */
export const VCT_PATH = "/vct/asset-control";

/** The credential's issuer of one key set: live the issuer, test the issuer + /test. */
export const vcIssuer = (issuer: string, env: KeyEnv): string => (env === "test" ? `${issuer.replace(/\/+$/, "")}/test` : issuer);

export const credentialProfile = (issuer: string): TokenProfile => ({
  typ: SD_JWT_VC_TYP,
  issuer: (env) => vcIssuer(issuer, env),
  requiredClaims: ["sub", "exp", "iat", "vct", "type", "channel"],
});

export type CredentialClaims = {
  iss: string;
  iat: number;
  exp: number;
  sub: string;
  vct: string;
  status: StatusClaim;
  cnf?: { jwk: HolderKey };
  type: string;
  channel: string;
  method: string;
  env: KeyEnv;
  /** selectively disclosable */
  identifier: string;
  /** selectively disclosable */
  external_user_id?: string;
};

const hasher = (data: string | ArrayBuffer, alg: string) => digest(data, alg);
// 128 bits per disclosure salt (RFC 9901 §9.3); the library's own generator gives fewer
const saltGenerator = () => pooledRandomBytes(16).toString("base64url");

/** The issuer-signed JWT and its disclosures, `~`-joined (no key-binding JWT: the holder adds one). */
export function issueCredential(key: SigningKey, claims: CredentialClaims): Promise<string> {
  const sdjwt = new SDJwtVcInstance({
    signer: (data: string) => rs256(data, key.privateKey),
    signAlg: "RS256",
    hasher,
    hashAlg: "sha-256",
    saltGenerator,
  });
  // a decoy digest when there is no external_user_id: the count of digests does not tell whether one exists
  const frame = { _sd: ["identifier", ...(claims.external_user_id ? ["external_user_id"] : [])], _sd_decoy: claims.external_user_id ? 0 : 1 };
  return sdjwt.issue(claims, frame as never, { header: { kid: key.kid } });
}
