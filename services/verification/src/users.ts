/**
 * Verified users (B2B): a tenant's verifications grouped by external_user_id.
 *
 * Which verifications count: a user is listed when at least one verification carrying its
 * external_user_id is `verified`; verification_count, types_verified and first/last_verified_at
 * cover those verified ones only (a revoked proof no longer vouches for the asset; pending, failed
 * and expired ones were never verified). The detail view also lists the user's revoked
 * verifications, with their status, so a tenant sees what was withdrawn. Identifiers are masked.
 *
 * The store computes the groups in SQL; this file only shapes and masks its rows.
 */
import type { VerifiedUser, VerifiedUserVerification } from "@icv/contracts/gen/icv/verification/v1/verification_service_pb.ts";
import { ts } from "@icv/platform";
import { channelFor } from "./channels/registry.ts";

/** Statuses shown in the list view, and in the detail view. */
export const LIST_STATUSES = ["verified"] as const;
export const DETAIL_STATUSES = ["verified", "revoked"] as const;

/** One group (user) as the store's GROUP BY answers it. */
export interface UserSummaryRow {
  external_user_id: string;
  verification_count: number;
  types_verified: string[];
  first_verified_at: Date;
  last_verified_at: Date;
}

/** One verification of a user, as the store answers it. */
export interface UserVerificationRow {
  id: string;
  external_user_id: string;
  type: string;
  channel: string;
  identifier: string;
  status: string;
  verified_at: Date | null;
  created_at: Date;
  proof_expires_at: Date | null;
  has_proof: boolean;
}

type UserInit = Omit<VerifiedUser, "$typeName" | "$unknown" | "verifications"> & { verifications: VerificationInit[] };
type VerificationInit = Omit<VerifiedUserVerification, "$typeName" | "$unknown">;

export function toUserVerification(v: UserVerificationRow): VerificationInit {
  return {
    id: v.id,
    type: v.type,
    channel: v.channel,
    identifier: channelFor(v.type, v.channel).mask(v.identifier),
    verifiedAt: ts(v.verified_at),
    status: v.status,
    hasProof: v.has_proof,
    proofExpiresAt: ts(v.proof_expires_at),
    createdAt: ts(v.created_at),
  };
}

/** Summaries (in their order) with their verifications (rows of every summary's user, in their order). */
export function toVerifiedUsers(summaries: UserSummaryRow[], rows: UserVerificationRow[]): UserInit[] {
  const byUser = new Map<string, VerificationInit[]>();
  for (const r of rows) {
    const list = byUser.get(r.external_user_id);
    if (list) list.push(toUserVerification(r));
    else byUser.set(r.external_user_id, [toUserVerification(r)]);
  }
  return summaries.map((s) => ({
    externalUserId: s.external_user_id,
    verificationCount: s.verification_count,
    typesVerified: s.types_verified,
    verifications: byUser.get(s.external_user_id) ?? [],
    firstVerifiedAt: ts(s.first_verified_at),
    lastVerifiedAt: ts(s.last_verified_at),
  }));
}
