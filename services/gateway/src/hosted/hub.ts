import type { ServerResponse } from "node:http";
import { AppError, type EventLog, type EventRecord, type Logger, type Subscription } from "@icv/platform";
import { HEARTBEAT, RETRY_MS, sseEvent } from "../sse/format.ts";

/** What the page's stream sends: the page state of the request (the same shape as GET /api/v1/verify/request/{id}). */
export interface HostedState {
  status: string;
  token_expired: boolean;
  assets: { verification_id: string | null }[];
  [k: string]: unknown;
}

const FINAL = new Set(["completed", "expired", "cancelled"]);
const isFinal = (s: HostedState) => s.token_expired || FINAL.has(s.status);

/** One open page stream. */
class HostedStream {
  last = "";
  verifications = new Set<string>();
  busy = false;
  again = false;
  closed = false;
  constructor(
    readonly res: ServerResponse,
    readonly requestId: string,
    readonly read: () => Promise<HostedState>,
  ) {}
}

export interface HostedHubOptions {
  heartbeatMs: number;
  /** Open streams per request (a user with a few tabs); more are refused with too_many_connections. */
  maxPerRequest?: number;
  logger: Logger;
}

/**
 * The hosted page's event streams. The page state is not built from event payloads: an event of
 * the request (topic verification_request) or of one of its assets' verifications (topic
 * verification) makes the stream read the state again (GetHostedRequest, which also brings the
 * request up to date) and send it as a `request` event when it changed. The heartbeat re-reads
 * too, so a cancel or an expiry without an event still reaches the page. A final state ends the stream.
 */
export class HostedHub {
  private readonly byRequest = new Map<string, Set<HostedStream>>();
  private readonly byVerification = new Map<string, Set<HostedStream>>();
  private readonly timer: NodeJS.Timeout;
  private subscription?: Subscription;
  private closing = false;

  constructor(private readonly o: HostedHubOptions) {
    this.timer = setInterval(() => this.tick(), Math.max(50, o.heartbeatMs));
    this.timer.unref();
  }

  /** Open streams (icv_sse_streams{kind="hosted"}). */
  get size(): number {
    let n = 0;
    for (const list of this.byRequest.values()) n += list.size;
    return n;
  }

  async listen(events: EventLog): Promise<void> {
    this.subscription = await events.broadcast({
      topics: ["verification", "verification_request"],
      name: "hosted-page streams",
      onEvent: (e) => this.publish(e),
    });
  }

  publish(e: EventRecord): void {
    const list = e.aggregateType === "verification_request" ? this.byRequest.get(e.aggregateId) : this.byVerification.get(e.aggregateId);
    for (const s of list ? [...list] : []) void this.refresh(s);
  }

  /** Reads the state (errors such as not_found go out before any byte), then streams `connected`, `request`, heartbeats. */
  async open(res: ServerResponse, requestId: string, read: () => Promise<HostedState>): Promise<void> {
    if (this.closing) throw new AppError("service_unavailable", "the gateway is shutting down");
    if ((this.byRequest.get(requestId)?.size ?? 0) >= (this.o.maxPerRequest ?? 5)) {
      throw new AppError("too_many_connections", "too many open event streams for this request; close one first");
    }
    const state = await read();
    const s = new HostedStream(res, requestId, read);
    res.writeHead(200, {
      "Content-Type": "text/event-stream",
      "Cache-Control": "no-store",
      Connection: "keep-alive",
      "X-Accel-Buffering": "no",
    });
    res.socket?.setNoDelay(true);
    res.write(`retry: ${RETRY_MS}\n\n${sseEvent("connected", { request_id: requestId, status: state.status })}`);
    this.send(s, state);
    if (isFinal(state)) {
      this.remove(s);
      res.end();
      return;
    }
    this.add(s);
    res.once("close", () => this.remove(s));
    // an event between the read and the registration would be lost: read once more
    void this.refresh(s);
  }

  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.timer);
    await this.subscription?.close();
    for (const list of [...this.byRequest.values()]) for (const s of [...list]) this.end(s);
  }

  private send(s: HostedStream, state: HostedState): void {
    const text = JSON.stringify(state);
    if (text !== s.last) {
      s.last = text;
      s.res.write(sseEvent("request", state));
    }
    this.follow(s, state);
  }

  /** Re-reads one stream's state; reads never overlap (a read asked for meanwhile runs after). */
  private async refresh(s: HostedStream): Promise<void> {
    if (s.closed) return;
    if (s.busy) {
      s.again = true;
      return;
    }
    s.busy = true;
    try {
      do {
        s.again = false;
        const state = await s.read();
        if (s.closed) return;
        this.send(s, state);
        if (isFinal(state)) return this.end(s);
      } while (s.again);
    } catch (e) {
      this.o.logger.warn({ err: (e as Error).message, verification_request_id: s.requestId }, "hosted page stream could not read its request");
    } finally {
      s.busy = false;
    }
  }

  /** Keeps the verification → stream map in step with the assets' current verifications. */
  private follow(s: HostedStream, state: HostedState): void {
    const now = new Set(state.assets.map((a) => a.verification_id).filter((v): v is string => !!v));
    for (const v of s.verifications) if (!now.has(v)) this.unmap(this.byVerification, v, s);
    for (const v of now) if (!s.verifications.has(v) && !s.closed) this.map(this.byVerification, v, s);
    s.verifications = now;
  }

  private map(m: Map<string, Set<HostedStream>>, key: string, s: HostedStream): void {
    const list = m.get(key);
    if (list) list.add(s);
    else m.set(key, new Set([s]));
  }

  private unmap(m: Map<string, Set<HostedStream>>, key: string, s: HostedStream): void {
    const list = m.get(key);
    list?.delete(s);
    if (list && !list.size) m.delete(key);
  }

  private add(s: HostedStream): void {
    this.map(this.byRequest, s.requestId, s);
    for (const v of s.verifications) this.map(this.byVerification, v, s);
  }

  private remove(s: HostedStream): void {
    if (s.closed) return;
    s.closed = true;
    this.unmap(this.byRequest, s.requestId, s);
    for (const v of s.verifications) this.unmap(this.byVerification, v, s);
  }

  private end(s: HostedStream): void {
    this.remove(s);
    s.res.end();
  }

  private tick(): void {
    for (const list of this.byRequest.values()) {
      for (const s of list) {
        s.res.write(HEARTBEAT.text);
        void this.refresh(s);
      }
    }
  }
}
