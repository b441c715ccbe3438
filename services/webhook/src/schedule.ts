/**
 * The retry schedule. The first attempt goes out at once; after a failed attempt n the next one
 * waits delays[n-1] (±20 % jitter). The default delays are 30 s, 2 min, 10 min, 1 h and 6 h, so
 * a delivery gets 6 attempts (DECISIONS.md: "0 s, 30 s, 2 min, 10 min, 1 h, 6 h", max 6).
 * WEBHOOK_RETRY_DELAYS_MS replaces the delays; max_attempts is always delays + 1.
 */
export const DEFAULT_RETRY_DELAYS_MS = [30_000, 120_000, 600_000, 3_600_000, 21_600_000];
export const JITTER = 0.2;
/** The longest wait a Retry-After can ask for; a longer one is cut to this. */
export const RETRY_AFTER_CAP_MS = 6 * 3_600_000;

export const maxAttempts = (delays: readonly number[]): number => delays.length + 1;

/** ms scaled by a factor in [1 − JITTER, 1 + JITTER], from random() in [0, 1). */
export const jittered = (ms: number, random: () => number): number => Math.round(ms * (1 + JITTER * (2 * random() - 1)));

/**
 * A Retry-After header as milliseconds from now: delta-seconds or an HTTP date. Undefined when
 * absent or unreadable; never negative.
 */
export function parseRetryAfter(value: string | string[] | undefined, now: Date): number | undefined {
  const v = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!v) return undefined;
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  // HTTP dates start with the day name (IMF-fixdate, RFC 850 and asctime forms)
  const at = /^[A-Za-z]{3}/.test(v) ? Date.parse(v) : NaN;
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now.getTime());
}

/**
 * The wait before the attempt after failed attempt `attempt` (1-based): the jittered schedule,
 * or longer when the receiver asked for it with Retry-After (capped at RETRY_AFTER_CAP_MS).
 */
export function retryDelay(attempt: number, delays: readonly number[], random: () => number, retryAfterMs?: number): number {
  const base = delays.length ? delays[Math.min(attempt, delays.length) - 1] : 0;
  const scheduled = jittered(base, random);
  return retryAfterMs === undefined ? scheduled : Math.max(scheduled, Math.min(retryAfterMs, RETRY_AFTER_CAP_MS));
}
