/** Rows ⇄ RPC messages: the one place the proof service converts them. */
import { ts } from "@icv/platform";
import type { ProofRow } from "../store/proofs.ts";

/** A proof's status as the ProofStatus message holds it. */
export const toStatus = (p: ProofRow, now: Date) => {
  const isRevoked = p.revoked_at !== null;
  const isExpired = p.expires_at <= now;
  return {
    proofId: p.id,
    status: isRevoked ? "revoked" : isExpired ? "expired" : "active",
    isValid: !isRevoked && !isExpired,
    isRevoked,
    revokedAt: ts(p.revoked_at),
    revokedReason: p.revoked_reason ?? undefined,
    expiresAt: ts(p.expires_at),
    isExpired,
  };
};
