import { randomBytes } from "node:crypto";
import { setMaxListeners } from "node:events";
import {
  inMessagesSpan,
  OutboundError,
  SpanKind,
  SpanStatusCode,
  tracingEnabled,
  webhookAttempts,
  type Clock,
  type Logger,
  type OutboundClient,
} from "@icv/platform";
import { parseRetryAfter, retryDelay } from "./schedule.ts";
import { signatureHeaders } from "./signing.ts";
import type { AttemptResult, DeliveryJob, DeliveryQueue } from "./store/rows.ts";

export const USER_AGENT = "ICV-Webhooks/1.0 (+https://www.standardwebhooks.com)";

/** The headers every attempt carries besides the signatures (also stored when the row is made). */
export const baseHeaders = (id: string): Record<string, string> => ({
  "content-type": "application/json",
  "user-agent": USER_AGENT,
  "webhook-id": id,
});

export interface SendResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** POSTs one body; throws OutboundError (refused, timeout, network, aborted) when no response came. */
export type Send = (url: string, init: { headers: Record<string, string>; body: string; signal: AbortSignal }) => Promise<SendResult>;

/** The production sender: the SSRF-guarded outbound client. */
export const outboundSend =
  (client: OutboundClient): Send =>
  (url, init) =>
    client.request(url, { method: "POST", headers: init.headers, body: init.body, signal: init.signal });

export interface DelivererOptions {
  queue: DeliveryQueue;
  send: Send;
  clock: Clock;
  logger: Logger;
  /** Attempts in flight at once (WEBHOOK_CONCURRENCY). */
  concurrency: number;
  /** How long a claim holds a row; must outlast the request timeout (plus writing the result). */
  leaseMs: number;
  /** Waits between attempts (WEBHOOK_RETRY_DELAYS_MS or the default schedule). */
  retryDelaysMs: readonly number[];
  /** How often due rows are looked for without a wake (retries of other replicas, expired leases). */
  pollMs: number;
  /** On stop: how long attempts in flight may finish before they are cut off (their leases then expire). */
  drainMs: number;
  /** Jitter source, [0, 1). */
  random?: () => number;
}

const FLUSH_BATCH = 500;
/** Failures that no retry can fix: the URL itself is refused or malformed. */
const PERMANENT = new Set(["refused", "invalid_url"]);
/** The receiver's way to stop retries (as Svix's): a failed response with `webhook-delivery: abort-message`. */
export const ABORT_REASON = "the receiver asked not to retry (webhook-delivery: abort-message)";

/**
 * One attempt's POST as a CLIENT span (`POST`) in the trace of the event the delivery was made for
 * (its stored traceparent; no span without one): method, response status and attempt number,
 * never the URL (a tenant's URL may carry a token) nor the body. The receiver is not sent a
 * `traceparent`: the request and its signed headers stay what they are with tracing off.
 */
function tracedSend(send: Send, job: DeliveryJob, init: Parameters<Send>[1]): Promise<SendResult> {
  const attributes = { "http.request.method": "POST", "icv.webhook.attempt": job.attempts + 1 };
  return inMessagesSpan("POST", SpanKind.CLIENT, attributes, [job.traceparent], async (span) => {
    try {
      const res = await send(job.url, init);
      span?.setAttribute("http.response.status_code", res.status);
      if (res.status < 200 || res.status >= 300) span?.setStatus({ code: SpanStatusCode.ERROR }).setAttribute("error.type", String(res.status));
      return res;
    } catch (e) {
      span?.setAttribute("error.type", e instanceof OutboundError ? e.kind : "error");
      throw e;
    }
  });
}

/** Whether a response carries `webhook-delivery: abort-message` (case-insensitive value). */
export function asksToAbort(headers: SendResult["headers"]): boolean {
  const v = headers["webhook-delivery"];
  return (Array.isArray(v) ? v : [v]).some((x) => x?.trim().toLowerCase() === "abort-message");
}

/** Why a delivery that ends failed with this attempt gave up (its attempt.exhausted entry). */
export function exhaustedReason(error: string, aborted: boolean, permanent: boolean, maxAttempts: number): string {
  if (aborted) return ABORT_REASON;
  if (permanent) return `no retry can succeed: ${error}`;
  return `all ${maxAttempts} attempts failed; the last: ${error}`;
}

/**
 * Sends due deliveries: claims them in batches under a lease (FOR UPDATE SKIP LOCKED, so two
 * replicas never send the same attempt), sends up to `concurrency` at once, and writes the
 * outcomes back in batches. Woken at once by new rows (wake), by its own next retry time, and
 * by a poll. An attempt cut off by a crash or a shutdown is never recorded: its lease expires and
 * it is sent again (same webhook-id), never dropped.
 */
export class Deliverer {
  private readonly random: () => number;
  private readonly abort = new AbortController();
  private readonly inFlight = new Set<Promise<void>>();
  private results: AttemptResult[] = [];
  private flushing: Promise<void> | undefined;
  private filling: Promise<void> | undefined;
  private fillAgain = false;
  private stopped = false;
  private poll: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryAt = Infinity;
  /** Attempts written so far, by outcome (for the benchmark and logs). */
  readonly counts = { delivered: 0, retried: 0, failed: 0 };

  constructor(private readonly o: DelivererOptions) {
    this.random = o.random ?? Math.random;
    setMaxListeners(0, this.abort.signal); // one listener per attempt in flight
  }

  start(): this {
    this.poll = setInterval(() => this.wake(), this.o.pollMs);
    this.poll.unref();
    this.wake();
    return this;
  }

  /** Looks for due rows now (new rows were written, or a retry came due). */
  wake(): void {
    if (this.stopped) return;
    if (this.filling) {
      this.fillAgain = true;
      return;
    }
    this.filling = this.fill().finally(() => (this.filling = undefined));
  }

  /** Stops claiming, lets attempts in flight finish for up to drainMs, cuts off the rest, writes what finished. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.poll);
    clearTimeout(this.retryTimer);
    await this.filling;
    const drained = Promise.all(this.inFlight);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([drained, new Promise<void>((r) => (timer = setTimeout(r, this.o.drainMs)))]);
    clearTimeout(timer);
    this.abort.abort(new OutboundError("aborted", "shutting down"));
    await drained;
    await this.flush();
  }

  private async fill(): Promise<void> {
    try {
      do {
        this.fillAgain = false;
        while (!this.stopped) {
          const room = this.o.concurrency - this.inFlight.size;
          if (room <= 0) break;
          const now = this.o.clock.now();
          const token = randomBytes(12).toString("base64url");
          const jobs = await this.o.queue.claimDue(now, new Date(now.getTime() + this.o.leaseMs), token, room);
          for (const job of jobs) this.dispatch(job);
          if (jobs.length < room) break;
        }
      } while (this.fillAgain && !this.stopped);
    } catch (err) {
      this.o.logger.error({ err }, "claiming webhook deliveries failed");
    }
  }

  private dispatch(job: DeliveryJob): void {
    const p: Promise<void> = this.attempt(job)
      .then((result) => {
        if (result) this.queueResult(result);
      })
      .catch((err) => this.o.logger.error({ err, delivery_id: job.id }, "webhook attempt failed unexpectedly"))
      .finally(() => {
        this.inFlight.delete(p);
        // refill at half capacity, without waiting for the results to be written
        if (this.inFlight.size === Math.floor(this.o.concurrency / 2)) this.wake();
      });
    this.inFlight.add(p);
  }

  /** One attempt; undefined when it was cut off by stop() (the lease then expires and it is sent again). */
  private async attempt(job: DeliveryJob): Promise<AttemptResult | undefined> {
    const at = this.o.clock.now();
    const started = performance.now();
    const secret = job.secret;
    const previous = job.previous_secret && job.previous_expires_at && job.previous_expires_at > at ? job.previous_secret : undefined;
    const headers = {
      ...baseHeaders(job.id),
      ...(secret ? signatureHeaders(job.id, Math.floor(at.getTime() / 1000), job.payload, { current: secret, previous }) : {}),
    };
    let status: number | null = null;
    let body: string | null = null;
    let error: string | undefined;
    let permanent = false;
    let aborted = false;
    let retryAfterMs: number | undefined;
    if (!secret) error = "no webhook secret for this tenant and environment";
    else {
      try {
        const init = { headers, body: job.payload, signal: this.abort.signal };
        const res = await (tracingEnabled() && job.traceparent ? tracedSend((url, i) => this.o.send(url, i), job, init) : this.o.send(job.url, init));
        status = res.status;
        body = res.body;
        if (status >= 300 && status < 400) error = `HTTP ${status}: redirects are not followed`;
        else if (status < 200 || status >= 300) error = `HTTP ${status}`;
        if (status === 429 || status === 503) retryAfterMs = parseRetryAfter(res.headers["retry-after"], at);
        if (error && asksToAbort(res.headers)) {
          aborted = permanent = true;
          error = `${error}; ${ABORT_REASON}`;
        }
      } catch (e) {
        if (this.abort.signal.aborted) return undefined;
        const oe = e instanceof OutboundError ? e : undefined;
        error = oe?.message ?? (e instanceof Error ? e.message : String(e));
        permanent = !!oe && PERMANENT.has(oe.kind);
      }
    }
    const n = job.attempts + 1;
    const entry = {
      attempt: n,
      at: at.toISOString(),
      ...(status !== null ? { status } : {}),
      ...(error ? { error } : {}),
      duration_ms: Math.round(performance.now() - started),
    };
    const last = permanent || n >= job.max_attempts;
    const outcome = !error ? "delivered" : last ? "failed" : "pending";
    const notices =
      outcome === "failed"
        ? [
            {
              event: "attempt.exhausted" as const,
              attempt: n,
              at: entry.at,
              reason: exhaustedReason(error!, aborted, permanent, job.max_attempts),
              duration_ms: 0,
            },
          ]
        : [];
    return {
      id: job.id,
      leaseToken: job.lease_token,
      status: outcome,
      responseStatus: status,
      responseBody: body,
      errorMessage: error ?? null,
      entry,
      notices,
      nextRetryAt: outcome === "pending" ? new Date(at.getTime() + retryDelay(n, this.o.retryDelaysMs, this.random, retryAfterMs)) : null,
      headers,
      at,
    };
  }

  private queueResult(r: AttemptResult): void {
    this.results.push(r);
    const outcome = r.status === "delivered" ? "delivered" : r.status === "failed" ? "failed" : "retried";
    this.counts[outcome]++;
    webhookAttempts.inc({ outcome });
    if (r.nextRetryAt) this.wakeAt(r.nextRetryAt);
    if (!this.flushing) this.flushing = this.flushLoop();
  }

  /** Writes queued outcomes until none are left (one write at a time, batched), then claims more. */
  private async flushLoop(): Promise<void> {
    await new Promise<void>((r) => setImmediate(r));
    try {
      while (this.results.length) {
        const batch = this.results.splice(0, FLUSH_BATCH);
        try {
          const disabled = await this.o.queue.recordResults(batch);
          // the URL is left out: a tenant's URL may carry a token in its query
          for (const e of disabled ?? [])
            this.o.logger.warn(
              { tenant_id: e.tenant_id, environment: e.environment, failing_since: e.failing_since },
              "webhook endpoint disabled: every attempt failed",
            );
        } catch (err) {
          // the leases expire and those attempts are made again: at-least-once, never lost
          this.o.logger.error({ err, deliveries: batch.length }, "recording webhook attempts failed");
        }
      }
    } finally {
      this.flushing = undefined;
    }
    this.wake();
  }

  private async flush(): Promise<void> {
    await this.flushing;
    if (this.results.length) await (this.flushing = this.flushLoop());
  }

  /** Wakes at the given time (the earliest retry this process scheduled). */
  private wakeAt(when: Date): void {
    const t = when.getTime();
    const now = this.o.clock.now().getTime();
    if (t >= this.retryAt && this.retryAt > now) return;
    this.retryAt = t;
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(
      () => {
        this.retryAt = Infinity;
        this.wake();
      },
      Math.max(0, t - now),
    );
    this.retryTimer.unref();
  }
}
