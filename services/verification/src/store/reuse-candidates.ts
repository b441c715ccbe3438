/** The smart-reuse read (requests/reuse.ts): verified proofs of an external user that may complete a request's asset. */
import type { Scope, SealingDatabase } from "@icv/platform";
import type { ReuseCandidateRow } from "./rows.ts";
import { identifierIndex } from "./sealing.ts";

const S = "verification";

/**
 * The verifications of a scope's external user whose proof may be reused for an asset: same
 * type, same canonical identifier (any, when null), one of `channels` (any, when null),
 * verified by their own challenge (a reused proof is never reused again), unrevoked, the proof
 * valid past `minProofExpiry`. Newest verified first; at most 20.
 */
export async function reuseCandidates(
  db: SealingDatabase,
  scope: Scope,
  f: { externalUserId: string; type: string; canonical: string | null; channels: string[] | null; minProofExpiry: Date },
): Promise<ReuseCandidateRow[]> {
  const r = await db.query<ReuseCandidateRow>(
    `SELECT id, type, channel, identifier, identifier_canonical, verified_at, proof_expires_at
       FROM ${S}.verifications
      WHERE tenant_id = $1 AND environment = $2 AND external_user_id = $3 AND type = $4 AND status = 'verified'
        AND method IS DISTINCT FROM 'reused_proof' AND proof_token IS NOT NULL AND redacted_at IS NULL AND proof_expires_at > $5 AND revoked_at IS NULL
        AND ($6::text IS NULL OR identifier_index = $6) AND ($7::text[] IS NULL OR channel = ANY($7::text[]))
      ORDER BY verified_at DESC, id DESC LIMIT 20`,
    [
      scope.tenantId,
      scope.env,
      f.externalUserId,
      f.type,
      f.minProofExpiry,
      f.canonical === null ? null : identifierIndex(db.personalData, f.type, f.canonical),
      f.channels,
    ],
  );
  return r.rows;
}
