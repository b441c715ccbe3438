/**
 * Validate: a JWT or an SD-JWT VC presentation, checked for a caller of one environment. A test
 * proof is a test proof when anything about it says test: the set of the key that signed it (a
 * test key only ever signs test proofs), its `env` claim (test proofs signed by a live key before
 * the sets were split), or its stored row. It is never valid for a live caller (test_proof); a
 * live proof is valid for either (proofs are portable).
 */
import type { Scope } from "@icv/platform";
import { credentialProfile } from "./credentials.ts";
import type { KeyEnv } from "./keys.ts";
import { checkPresentation, isPresentation, type Disclosed } from "./presentations.ts";
import type { ProofDeps, ProofFormat } from "./proofs.ts";
import { invalid, jwtProfile, verifyProof, type InvalidReason, type ProofClaims } from "./tokens.ts";

export type Validation =
  | {
      valid: true;
      claims: ProofClaims;
      testMode: boolean;
      format: ProofFormat;
      /** the salt of claims.identifier_hash (empty: a proof from before salting) */
      identifierSalt: string;
      /** SD-JWT VC: what the presentation disclosed */
      disclosed: Disclosed;
      holderBound: boolean;
    }
  | { valid: false; reason: InvalidReason; message: string };

const no = (reason: InvalidReason) => invalid(reason) as Validation;

export async function validateProof(d: ProofDeps, caller: Scope, token: string, binding: { audience?: string; nonce?: string } = {}): Promise<Validation> {
  const now = d.clock.now();
  const keyFor = (kid: string) => d.keys.verificationKey(kid);
  const format: ProofFormat = isPresentation(token) ? "sd-jwt-vc" : "jwt";
  let checked: { claims: ProofClaims; keyEnv: KeyEnv; disclosed: Disclosed; seen?: Parameters<ProofDeps["store"]["markPresented"]>[0] };
  if (format === "jwt") {
    const v = await verifyProof(token, jwtProfile(d.issuer), keyFor, now, d.verified);
    if (!v.valid) return v;
    checked = { claims: v.claims, keyEnv: v.keyEnv, disclosed: {} };
  } else {
    const v = await checkPresentation(token, credentialProfile(d.issuer), keyFor, now, d.verifiedCredentials, binding);
    if (!v.valid) return v;
    checked = { claims: v.claims, keyEnv: v.keyEnv, disclosed: v.disclosed, seen: v.binding };
  }
  const { claims } = checked;
  const state = await d.store.revocationState(claims.sub);
  if (!state) return no("unknown_key");
  const isTest = checked.keyEnv === "test" || claims.env !== "live" || state.environment !== "live";
  if (isTest && caller.env === "live") return no("test_proof");
  if (state.revoked_at) return no("revoked");
  if (state.suspended_at) return no("suspended");
  // a JWT cannot carry a key-binding JWT: a holder-bound proof, or a relying party that asks for binding, needs the SD-JWT VC
  if (format === "jwt" && (claims.cnf || binding.audience !== undefined || binding.nonce !== undefined)) return no("holder_binding_required");
  // accepted once per (credential, nonce), on every replica: a replayed presentation is refused
  if (checked.seen && !(await d.store.markPresented(checked.seen))) return no("holder_binding_invalid");
  return {
    valid: true,
    claims,
    testMode: isTest,
    format,
    identifierSalt: state.identifier_salt ?? "",
    disclosed: checked.disclosed,
    holderBound: checked.seen !== undefined,
  };
}
