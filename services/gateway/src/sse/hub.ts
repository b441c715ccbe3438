import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { AppError, decodeEvent, eventMessage, type EventLog, type EventRecord, type Logger, type Subscription } from "@icv/platform";
import type { ConnectionLimiter } from "./connection-limiter.ts";
import { HEARTBEAT, RETRY_MS, STATUS_CHANGED, TERMINAL_STATUSES, chunk, sseEvent, statusChangedEvent } from "./format.ts";
import { SseStream } from "./stream.ts";

/** What the verification service says when a stream opens (ListVerificationEvents). */
export interface StreamState {
  status: string;
  /** The newest event of the verification ("" when none). */
  lastEventId: string;
  /** Its events after the client's Last-Event-ID (all when none was sent), oldest first. */
  events: { id: string; eventType: string; payload: Record<string, unknown> }[];
}

export interface OpenOptions {
  req: IncomingMessage;
  res: ServerResponse;
  tenantId: string;
  verificationId: string;
  /** Last-Event-ID of a reconnecting client. */
  lastEventId?: string;
  /** Reads the state; throws not_found for another tenant's or environment's verification. */
  read(after: string | undefined): Promise<StreamState>;
}

export interface SseHubOptions {
  limiter: ConnectionLimiter;
  maxPerTenant: number;
  heartbeatMs: number;
  logger: Logger;
}

/** The heartbeat wheel: each tick writes the heartbeat to one slot's streams, so every stream gets one per period. */
const SLOTS = 10;

/**
 * The gateway's event streams: a map from verification id to its open streams, fed by one
 * broadcast subscription per process. An event for a verification with no stream here costs a
 * map lookup; otherwise it is serialized once and the same string goes to every listener.
 * One shared timer sends the heartbeats (and renews the streams' connection leases).
 */
export class SseHub {
  private readonly streams = new Map<string, Set<SseStream>>();
  private readonly wheel: Set<SseStream>[] = Array.from({ length: SLOTS }, () => new Set());
  private cursor = 0;
  private count = 0;
  private readonly timer: NodeJS.Timeout;
  private subscription?: Subscription;
  private closing = false;

  constructor(private readonly o: SseHubOptions) {
    this.timer = setInterval(() => this.tick(), Math.max(10, Math.round(o.heartbeatMs / SLOTS)));
    this.timer.unref();
  }

  /** Streams open (or opening) in this process. */
  get size(): number {
    return this.count;
  }

  /** Subscribes to every verification event published from now on (each replica gets each event once). */
  async listen(events: EventLog): Promise<void> {
    this.subscription = await events.broadcast({ topics: ["verification"], onEvent: (e) => this.publish(e) });
  }

  /** Fans one event out to the streams of its verification. */
  publish(e: EventRecord): void {
    const list = this.streams.get(e.aggregateId);
    const m = list && eventMessage(e, STATUS_CHANGED);
    if (!list || !m) return;
    const c = chunk(statusChangedEvent(e.id, m));
    const terminal = TERMINAL_STATUSES.has(m.status);
    // ending a stream takes it out of the list: walk a copy then
    for (const s of terminal ? [...list] : list) {
      if (s.tenantId === e.tenantId && s.deliver(e.id, c, terminal)) this.end(s);
    }
  }

  /**
   * Opens a stream: takes a connection slot (429 too_many_connections when the tenant has none
   * left), registers for live events (held meanwhile), reads the verification's state and the
   * events after Last-Event-ID (404 before anything is sent), then sends `connected`, the
   * missed `status_changed` events and whatever arrived meanwhile, skipping ids already sent.
   * A terminal verification's stream ends there. A client that reconnects with a Last-Event-ID
   * at or after a terminal event gets 204, which tells an EventSource to stop reconnecting.
   */
  async open(o: OpenOptions): Promise<void> {
    if (this.closing) throw new AppError("service_unavailable", "the gateway is shutting down");
    const connId = randomUUID();
    if (!(await this.o.limiter.acquire(o.tenantId, connId, this.o.maxPerTenant))) {
      throw new AppError("too_many_connections", `at most ${this.o.maxPerTenant} concurrent event streams per tenant; close one first`);
    }
    const s = new SseStream(o.res, o.tenantId, o.verificationId, connId);
    this.add(s);
    o.res.once("close", () => this.remove(s));
    if (o.res.destroyed) return this.remove(s);

    let state: StreamState;
    try {
      state = await o.read(o.lastEventId);
    } catch (e) {
      this.remove(s);
      throw e;
    }
    if (s.closed) {
      if (o.res.destroyed) return;
      throw new AppError("service_unavailable", "the gateway is shutting down");
    }

    const replay = o.lastEventId
      ? state.events.flatMap((e) => (e.eventType === STATUS_CHANGED ? [{ id: e.id, m: decodeEvent(STATUS_CHANGED, e.payload) }] : []))
      : [];
    let end = TERMINAL_STATUSES.has(state.status);
    if (end && o.lastEventId && !replay.length) {
      this.remove(s);
      o.res.writeHead(204).end();
      return;
    }
    let first = `retry: ${RETRY_MS}\n\n` + sseEvent("connected", { verification_id: o.verificationId, status: state.status }, state.lastEventId || undefined);
    for (const e of replay) first += statusChangedEvent(e.id, e.m);
    s.lastId = state.lastEventId;
    for (const h of end ? [] : s.held!) {
      if (h.id <= s.lastId) continue;
      first += h.chunk.text;
      s.lastId = h.id;
      if ((end = h.terminal)) break;
    }
    s.held = null;
    s.start(first);
    if (end) return this.end(s);
    // into the slot that has just been served: its next heartbeat is one full period away
    s.slot = this.cursor;
    this.wheel[s.slot].add(s);
  }

  /** Ends every stream and stops listening (shutdown; clients reconnect to another replica). */
  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.timer);
    await this.subscription?.close();
    for (const list of [...this.streams.values()]) for (const s of [...list]) this.end(s);
  }

  private add(s: SseStream): void {
    this.count++;
    const list = this.streams.get(s.verificationId);
    if (list) list.add(s);
    else this.streams.set(s.verificationId, new Set([s]));
  }

  /** Forgets a stream at once: fan-out entry, heartbeat slot, connection slot. Idempotent. */
  private remove(s: SseStream): void {
    if (s.closed) return;
    s.closed = true;
    this.count--;
    const list = this.streams.get(s.verificationId);
    list?.delete(s);
    if (list && !list.size) this.streams.delete(s.verificationId);
    if (s.slot >= 0) this.wheel[s.slot].delete(s);
    this.o.limiter.release(s.tenantId, s.connId).catch((err: Error) => this.o.logger.warn({ err: err.message }, "could not release an event stream slot"));
  }

  private end(s: SseStream): void {
    this.remove(s);
    if (s.held === null) s.res.end();
  }

  private tick(): void {
    this.cursor = (this.cursor + 1) % SLOTS;
    const slot = this.wheel[this.cursor];
    if (!slot.size) return;
    const leases = this.o.limiter.refresh ? new Map<string, string[]>() : undefined;
    for (const s of slot) {
      s.send(HEARTBEAT);
      if (!leases) continue;
      const ids = leases.get(s.tenantId);
      if (ids) ids.push(s.connId);
      else leases.set(s.tenantId, [s.connId]);
    }
    for (const [tenantId, ids] of leases ?? []) {
      this.o.limiter.refresh!(tenantId, ids).catch((err: Error) => this.o.logger.warn({ err: err.message }, "could not renew event stream leases"));
    }
  }
}
