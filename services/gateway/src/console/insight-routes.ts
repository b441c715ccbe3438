import { z } from "zod";
import { iso } from "@icv/platform";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { scopeOf, type Clients } from "../clients.ts";
import { route, type RouteDef } from "../registry.ts";

const meta = (method: RouteDef["method"], path: string) => ({ method, path, tag: "Console", summary: path, auth: "public" as const, responses: {} });
const PERIODS = { "24h": { ms: 24 * 3600_000, bucket: "hour" }, "30d": { ms: 30 * 24 * 3600_000, bucket: "day" } } as const;
/** Verifications that showed control (verified, and suspended or revoked since) … */
const SHOWN = ["verified", "suspended", "revoked"];
/** … out of those that finished (those, and failed or expired). */
const FINISHED = [...SHOWN, "failed", "expired"];

const asRecord = (counts: { key: string; count: number }[]) => Object.fromEntries(counts.map((c) => [c.key, c.count]));

/**
 * `GET /console/api/{env}/stats/verifications` (the overview's counts and charts, grouped by the
 * verification service) and `POST /console/api/{env}/search/verifications` (by an identifier typed
 * in full, answered masked). The search is a POST so that the identifier stays out of URLs (browser
 * history, proxies' logs) and each search is in the audit log; a viewer may search. Both by RPC;
 * the gateway only shapes the answers.
 */
export function insightRoutes(c: Clients): RouteDef[] {
  return [
    route({
      ...meta("get", "/stats/verifications"),
      query: z.object({ period: z.enum(["24h", "30d"]) }).strict(),
      async handler({ req, query }) {
        const p = PERIODS[query.period];
        const since = new Date(Date.now() - p.ms);
        const r = await c.verification.getVerificationStats({ scope: scopeOf(req), since: timestampFromDate(since), bucket: p.bucket });
        const byStatus = asRecord(r.byStatus);
        const sum = (keys: string[]) => keys.reduce((n, k) => n + (byStatus[k] ?? 0), 0);
        const finished = sum(FINISHED);
        return {
          body: {
            period: query.period,
            bucket: p.bucket,
            since: iso(since),
            total: r.total,
            by_status: byStatus,
            by_channel: asRecord(r.byChannel),
            // null when nothing finished yet
            success_rate: finished ? Math.round((1000 * sum(SHOWN)) / finished) / 10 : null,
            buckets: r.buckets.map((b) => ({ start: iso(b.start), by_status: asRecord(b.byStatus) })),
          },
        };
      },
    }),
    route({
      ...meta("post", "/search/verifications"),
      body: z
        .object({
          identifier: z.string().min(1).max(320),
          type: z.string().max(40).optional(),
          page: z.number().int().min(1).max(1_000_000).optional(),
          limit: z.number().int().min(1).max(100).optional(),
        })
        .strict(),
      async handler({ req, body }) {
        const page = body.page ?? 1;
        const limit = body.limit ?? 20;
        const r = await c.verification.searchVerifications({ scope: scopeOf(req), identifier: body.identifier, type: body.type, page: { page, limit } });
        const pi = r.pageInfo!;
        return {
          body: {
            data: r.verifications.map((v) => ({
              id: v.id,
              type: v.type,
              channel: v.channel,
              status: v.status,
              masked_identifier: v.maskedIdentifier,
              external_user_id: v.externalUserId ?? null,
              created_at: iso(v.createdAt),
            })),
            pagination: { page: pi.page, limit: pi.limit, total: pi.total, pages: pi.pages, hasMore: pi.hasMore, has_more: pi.hasMore },
          },
        };
      },
    }),
  ];
}
