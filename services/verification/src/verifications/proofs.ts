/** The proof service's side of a verification: a proof as the verification keeps it, reused proofs, withdrawing one, validating one. */
import { timingSafeEqual } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import { ProofFormat, type IssueProofResponse } from "@icv/contracts/gen/icv/proof/v1/proof_service_pb.ts";
import { toDate, ts, type HolderKey, type Scope } from "@icv/platform";
import type { Channel } from "../channels/channel.ts";
import { channelFor } from "../channels/registry.ts";
import type { ProofFormat as Format } from "../store/rows.ts";
import { identifierHash, rpcScope, type UseCaseDeps } from "./deps.ts";

export const toProofFormat = (f: Format) => (f === "sd-jwt-vc" ? ProofFormat.SD_JWT_VC : ProofFormat.JWT);

/** A proof as the verification keeps it: the JWT, its expiry, its identifier salt and, when asked for, the SD-JWT VC. */
export interface IssuedProof {
  token: string;
  expiresAt: Date;
  /** The token's verified_at: the one source of the row's (a retry gets the stored proof's). */
  verifiedAt?: Date;
  identifierSalt: string;
  sdJwtVc?: string;
}

export const issued = (p: IssueProofResponse): IssuedProof => ({
  token: p.token,
  expiresAt: toDate(p.expiresAt)!,
  verifiedAt: toDate(p.verifiedAt),
  identifierSalt: p.identifierSalt,
  sdJwtVc: p.sdJwtVc,
});

/** Signs the proof of a verification completed from an earlier proof (reuse.ts): `method: reused_proof`; idempotent by id. */
export async function issueReusedProof(
  deps: Pick<UseCaseDeps, "proofs">,
  scope: Scope,
  v: {
    id: string;
    type: string;
    channel: string;
    identifierCanonical: string;
    externalUserId: string;
    ttl: number;
    proofFormat: Format;
    holderKey: HolderKey | null;
  },
  at: Date,
): Promise<IssuedProof> {
  return issued(
    await deps.proofs.issueProof({
      scope: rpcScope(scope),
      proofId: v.id,
      type: v.type,
      channel: v.channel,
      identifier: v.identifierCanonical,
      externalUserId: v.externalUserId,
      verifiedAt: ts(at),
      expiresInSeconds: v.ttl,
      method: "reused_proof",
      format: toProofFormat(v.proofFormat),
      holderKey: (v.holderKey ?? undefined) as JsonObject | undefined,
    }),
  );
}

/** Withdraws a proof that was issued for a verification that was then not stored. */
export async function withdrawProof(deps: Pick<UseCaseDeps, "proofs">, scope: Scope, id: string): Promise<void> {
  await deps.proofs.revokeProof({ scope: rpcScope(scope), proofId: id, reason: "other" });
}

/**
 * Proof check for a caller of `scope`'s environment: a test proof is valid only for a test scope
 * (the proof service answers test_proof otherwise). With an identifier, normalized like the
 * asset: a JWT's salted hash is compared, an SD-JWT VC presentation's disclosed identifier
 * (identifier_not_disclosed when it discloses none).
 */
export async function validateProof(
  deps: Pick<UseCaseDeps, "proofs">,
  scope: Scope,
  token: string,
  identifier?: string,
  binding: { audience?: string; nonce?: string } = {},
) {
  const r = await deps.proofs.validateProof({ proofToken: token, scope: rpcScope(scope), ...binding });
  if (!r.valid || identifier === undefined) return r;
  const canonical = proofCanonical(r.type, r.channel, identifier);
  const refuse = (reason: string, message: string) => ({ valid: false, reason, message }) as typeof r;
  let a: Buffer;
  let b: Buffer;
  if (r.format === ProofFormat.SD_JWT_VC) {
    if (r.disclosedIdentifier === undefined) return refuse("identifier_not_disclosed", "the presentation does not disclose the identifier");
    [a, b] = [Buffer.from(canonical), Buffer.from(r.disclosedIdentifier)];
  } else {
    [a, b] = [Buffer.from(canonical ? identifierHash(r.identifierSalt, canonical) : "", "hex"), Buffer.from(r.identifierHash, "hex")];
  }
  if (!canonical || a.length !== b.length || !timingSafeEqual(a, b)) return refuse("identifier_mismatch", "the identifier does not match the proof");
  return r;
}

/**
 * The compared form of an identifier given to check a proof: normalized as at creation, else as
 * a provider attests it (a phone a session captured may be one the strict check refuses); ""
 * when neither takes it.
 */
function proofCanonical(type: string, channel: string, raw: string): string {
  let c: Channel;
  try {
    c = channelFor(type, channel);
  } catch {
    return "";
  }
  try {
    return c.normalize(raw).canonical;
  } catch {
    return c.phone?.attestedCanonical(raw) ?? "";
  }
}
