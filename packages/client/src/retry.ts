// The fetch every call of the client goes through: an Idempotency-Key on each POST (the same key on
// every retry of it, so a retried create is never made twice), and retries of 429 and 503 answers
// that wait what Retry-After asks (seconds or an HTTP date), or a short backoff without it.
import { randomUUID } from "node:crypto";

export interface RetryOptions {
  /** Retries after the first attempt (default 3; 0: none). */
  retries?: number;
  /** The longest wait honoured: a Retry-After asking for longer answers the 429/503 at once (default 60 s). */
  maxDelayMs?: number;
  /** The first backoff when the answer names no Retry-After, doubled per retry (default 500 ms). */
  baseDelayMs?: number;
  /** Told before each wait (logging, tests). */
  onRetry?: (info: { attempt: number; status: number; delayMs: number; url: string }) => void;
}

export type FetchLike = (input: Request, init?: RequestInit) => Promise<Response>;

const RETRIED = new Set([429, 503]);

/** The wait a Retry-After header asks for, in ms (undefined when absent or unreadable). */
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  if (!header) return undefined;
  const v = header.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

export function sleep(ms: number, signal?: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal?.reason);
    };
    const t = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** `base` with an automatic Idempotency-Key on POST and retries of 429/503 (`retry: false`: keys only). */
export function retryingFetch(base: FetchLike, retry: RetryOptions | false = {}): FetchLike {
  const retries = retry === false ? 0 : Math.max(0, retry.retries ?? 3);
  const maxDelayMs = retry === false ? 0 : (retry.maxDelayMs ?? 60_000);
  const baseDelayMs = retry === false ? 0 : (retry.baseDelayMs ?? 500);
  return async (input, init) => {
    if (input.method === "POST" && !input.headers.has("idempotency-key")) input.headers.set("idempotency-key", randomUUID());
    for (let attempt = 0; ; attempt++) {
      // the body can be read once: a copy for each attempt that may be followed by another
      const res = await base(attempt < retries ? input.clone() : input, init);
      if (!RETRIED.has(res.status) || attempt >= retries) return res;
      const asked = retryAfterMs(res.headers.get("retry-after"));
      const delayMs = asked ?? baseDelayMs * 2 ** attempt * (0.8 + Math.random() * 0.4);
      if (delayMs > maxDelayMs) return res;
      await res.body?.cancel();
      (retry as RetryOptions).onRetry?.({ attempt: attempt + 1, status: res.status, delayMs, url: input.url });
      await sleep(delayMs, input.signal);
    }
  };
}
