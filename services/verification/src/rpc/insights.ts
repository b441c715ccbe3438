// GetVerificationStats and SearchVerifications: the console's overview counts and its search by
// identifier (the rules: insights.ts; the reads: store/insights.ts).
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import type { PageRequest, TenantScope } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { AppError, pageInfo, pageRequest, requireScope, systemClock, toDate, ts, type Clock, type SealingDatabase } from "@icv/platform";
import { channelFor } from "../channels/registry.ts";
import { searchKeys, statsOf, statsWindow } from "../insights.ts";
import { countVerifications, verificationsByIdentifier } from "../store/insights.ts";
import { identifierIndex } from "../store/sealing.ts";

/** The console's read-only handlers of VerificationService. */
export function insightHandlers(db: SealingDatabase, clock: Clock = systemClock) {
  return {
    async getVerificationStats(req: { scope?: TenantScope; since?: Timestamp; bucket: string }) {
      const scope = requireScope(req.scope);
      const now = clock.now();
      const w = statsWindow(toDate(req.since), req.bucket, now);
      const s = statsOf(await countVerifications(db, scope, w.since, w.bucket), w.since, w.bucket, now);
      return { ...s, buckets: s.buckets.map((b) => ({ start: ts(b.start), byStatus: b.byStatus })) };
    },
    async searchVerifications(req: { scope?: TenantScope; identifier: string; type?: string; page?: PageRequest }) {
      const scope = requireScope(req.scope);
      if (!req.identifier || req.identifier.length > 320)
        throw new AppError("validation_error", "identifier must be 1 to 320 characters", {
          details: [{ field: "identifier", message: "the identifier in full", code: "too_big" }],
        });
      const { page, limit, offset } = pageRequest(req.page);
      const { rows, total } = await verificationsByIdentifier(
        db,
        scope,
        searchKeys(req.identifier, req.type || undefined).map((k) => identifierIndex(db.personalData, k.type, k.canonical)),
        limit,
        offset,
      );
      return {
        verifications: rows.map((v) => ({
          id: v.id,
          type: v.type,
          channel: v.channel,
          status: v.status,
          maskedIdentifier: channelFor(v.type, v.channel).mask(v.identifier),
          externalUserId: v.external_user_id ?? undefined,
          createdAt: ts(v.created_at),
        })),
        pageInfo: pageInfo(page, limit, total),
      };
    },
  };
}
