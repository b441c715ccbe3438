/** Rows ⇄ RPC messages: the one place the proof service converts them. */
import { create } from "@bufbuild/protobuf";
import { ProofFormat, ProofStatusSchema, type ProofStatus } from "@icv/contracts/gen/icv/proof/v1/proof_service_pb.ts";
import { ts } from "@icv/platform";
import type { ProofFormat as Format } from "../proofs.ts";
import type { ProofRow } from "../store/proofs.ts";

/** A proof's status: revoked (final) before expired before suspended before active. */
export const toStatus = (p: ProofRow, now: Date): ProofStatus => {
  const isRevoked = p.revoked_at !== null;
  const isExpired = p.expires_at <= now;
  const isSuspended = !isRevoked && p.suspended_at !== null;
  return create(ProofStatusSchema, {
    proofId: p.id,
    status: isRevoked ? "revoked" : isExpired ? "expired" : isSuspended ? "suspended" : "active",
    isValid: !isRevoked && !isExpired && !isSuspended,
    isRevoked,
    revokedAt: ts(p.revoked_at),
    revokedReason: p.revoked_reason ?? undefined,
    expiresAt: ts(p.expires_at),
    isExpired,
    isSuspended,
    suspendedAt: isSuspended ? ts(p.suspended_at) : undefined,
    suspendedReason: isSuspended ? (p.suspended_reason ?? undefined) : undefined,
  });
};

export const fromFormat = (f: ProofFormat): Format => (f === ProofFormat.SD_JWT_VC ? "sd-jwt-vc" : "jwt");
export const toFormat = (f: Format): ProofFormat => (f === "sd-jwt-vc" ? ProofFormat.SD_JWT_VC : ProofFormat.JWT);
