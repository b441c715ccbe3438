/** Exponential backoff with full jitter between attempts, capped: 1×, 2×, 4×… initialMs, at most maxMs. */
export interface BackoffOptions {
  initialMs?: number;
  maxMs?: number;
  /** Stops waiting (the pending attempt's error is thrown). */
  signal?: AbortSignal;
}

export const backoffDelay = (attempt: number, { initialMs = 200, maxMs = 5_000 }: BackoffOptions = {}, random = Math.random): number =>
  Math.round(Math.min(maxMs, initialMs * 2 ** Math.min(attempt, 20)) * (0.5 + random() / 2));

export const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });

/**
 * Runs fn until it succeeds, waiting with backoff after each failure that `retryable` accepts
 * (others are thrown at once). `onRetry` hears each failure before the wait (to log it).
 */
export async function retryWithBackoff<T>(
  fn: (attempt: number) => Promise<T>,
  opts: BackoffOptions & { retryable?: (e: unknown) => boolean; onRetry?: (e: unknown, attempt: number, delayMs: number) => void } = {},
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (e) {
      if ((opts.retryable && !opts.retryable(e)) || opts.signal?.aborted) throw e;
      const delay = backoffDelay(attempt, opts);
      opts.onRetry?.(e, attempt, delay);
      await sleep(delay, opts.signal);
      if (opts.signal?.aborted) throw e;
    }
  }
}
