/**
 * A public profile as its page and /p/{id}.json show it: the REST shape and its conversion from the
 * RPC answer, below both routes/profiles.ts and the page (hosted/profile-page.ts).
 */
import type { GetPublicProfileResponse } from "@icv/contracts/gen/icv/verification/v1/profile_service_pb.ts";
import { iso, type AssetChannel, type AssetType } from "@icv/platform";
import { z } from "zod";
import { assetChannel, assetType, timestamp } from "./schemas.ts";

const PUBLIC_STATUSES = ["valid", "revoked", "expired", "suspended", "invalid"] as const;

export const PublicProfile = z
  .object({
    id: z.string(),
    display_name: z.string(),
    bio: z.string().nullable(),
    avatar_url: z.string().nullable(),
    test: z.boolean().describe("A test-mode profile: its proofs are test proofs"),
    proofs: z.array(
      z.object({
        label: z.string(),
        type: assetType,
        channel: assetChannel,
        identifier: z.string().nullable().describe("Per the proof's mask_level; null when hidden"),
        verified_at: timestamp.nullable(),
        status: z.enum(PUBLIC_STATUSES).describe("Re-checked with the proof service at each read: a revoked or expired proof is never shown as valid"),
        expires_at: timestamp.nullable(),
        revoked_at: timestamp.nullable(),
        log_index: z
          .number()
          .int()
          .nullable()
          .describe("Its issuance entry in the transparency log (GET /api/v1/log/proof?leaf_index= proves it); null until logged"),
      }),
    ),
    checked_at: timestamp,
  })
  .meta({ id: "PublicProfile" });
export type PublicProfileBody = z.infer<typeof PublicProfile>;

/** The public view (the page's data and /p/{id}.json). */
export function toPublicProfile(r: GetPublicProfileResponse): PublicProfileBody {
  const p = r.profile!;
  return {
    id: p.id,
    display_name: p.displayName,
    bio: p.bio ?? null,
    avatar_url: p.avatarUrl ?? null,
    test: p.test,
    proofs: p.proofs.map((x) => ({
      label: x.label,
      type: x.type as AssetType,
      channel: x.channel as AssetChannel,
      identifier: x.identifier ?? null,
      verified_at: iso(x.verifiedAt) ?? null,
      status: x.status as (typeof PUBLIC_STATUSES)[number],
      expires_at: iso(x.expiresAt) ?? null,
      revoked_at: iso(x.revokedAt) ?? null,
      log_index: x.logIndex === undefined ? null : Number(x.logIndex),
    })),
    checked_at: iso(r.checkedAt)!,
  };
}
