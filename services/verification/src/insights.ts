// The console's views of a scope's verifications: counts over a window (by status, by channel and
// per hour or day) and the search by an identifier typed in full. Plain functions over data; the
// reads are store/insights.ts.
import { AppError } from "@icv/platform";
import { ASSET_TYPES, CHANNELS_BY_TYPE, type AssetType } from "@icv/platform";
import { channelFor } from "./channels/registry.ts";
import type { StatsGroup } from "./store/insights.ts";

/** The widest window the counts cover. */
export const MAX_STATS_DAYS = 31;
const BUCKET_MS = { hour: 3600_000, day: 86_400_000 } as const;
export type Bucket = keyof typeof BUCKET_MS;

/** The bucket width and window asked for, checked: "hour" or "day", since within the last 31 days and not in the future. */
export function statsWindow(since: Date | undefined, bucket: string, now: Date): { since: Date; bucket: Bucket } {
  if (bucket !== "hour" && bucket !== "day")
    throw new AppError("validation_error", "bucket must be hour or day", {
      details: [{ field: "bucket", message: "hour or day", code: "invalid_enum_value" }],
    });
  if (!since || since.getTime() > now.getTime() || now.getTime() - since.getTime() > MAX_STATS_DAYS * BUCKET_MS.day)
    throw new AppError("validation_error", `since must be set, in the past, and at most ${MAX_STATS_DAYS} days ago`, {
      details: [{ field: "since", message: `within the last ${MAX_STATS_DAYS} days`, code: "out_of_range" }],
    });
  return { since, bucket };
}

const byCount = (m: Map<string, number>) => [...m].map(([key, count]) => ({ key, count })).sort((a, b) => b.count - a.count || a.key.localeCompare(b.key));
const bump = (m: Map<string, number>, k: string, n: number) => m.set(k, (m.get(k) ?? 0) + n);

/** The grouped counts as the answer shows them: totals by status and channel, and every bucket from since's to now's (empty ones too). */
export function statsOf(groups: StatsGroup[], since: Date, bucket: Bucket, now: Date) {
  const width = BUCKET_MS[bucket];
  const first = Math.floor(since.getTime() / width) * width;
  const perBucket = new Map<number, Map<string, number>>();
  for (let t = first; t <= now.getTime(); t += width) perBucket.set(t, new Map());
  const status = new Map<string, number>();
  const channel = new Map<string, number>();
  let total = 0;
  for (const g of groups) {
    total += g.n;
    bump(status, g.status, g.n);
    bump(channel, g.channel, g.n);
    const b = perBucket.get(g.start * 1000);
    if (b) bump(b, g.status, g.n);
  }
  return {
    total,
    byStatus: byCount(status),
    byChannel: byCount(channel),
    buckets: [...perBucket].map(([start, m]) => ({ start: new Date(start), byStatus: byCount(m) })),
  };
}

/**
 * The (type, canonical identifier) pairs an identifier typed in full stands for: normalized by
 * `type` alone when given, else by every type and channel that accepts it. An identifier no type
 * accepts is refused (invalid_identifier), as when a verification is created.
 */
export function searchKeys(identifier: string, type?: string): { type: string; canonical: string }[] {
  if (type !== undefined && !(ASSET_TYPES as string[]).includes(type))
    throw new AppError("validation_error", `unknown type ${JSON.stringify(type.slice(0, 40))}`, {
      details: [{ field: "type", message: `one of ${ASSET_TYPES.join(", ")}`, code: "invalid_enum_value" }],
    });
  const types = type ? [type as AssetType] : ASSET_TYPES;
  const keys = new Map<string, { type: string; canonical: string }>();
  let lastError: unknown;
  for (const t of types)
    for (const channel of CHANNELS_BY_TYPE[t]) {
      try {
        const canonical = channelFor(t, channel).normalize(identifier).canonical;
        keys.set(`${t}\u0000${canonical}`, { type: t, canonical });
      } catch (e) {
        lastError = e;
      }
    }
  if (!keys.size) throw type && lastError instanceof AppError ? lastError : new AppError("invalid_identifier", "no verification type accepts this identifier");
  return [...keys.values()];
}
