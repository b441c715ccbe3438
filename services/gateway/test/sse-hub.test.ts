// The SSE hub on a real HTTP server with a fake event log: fan-out of one serialized string,
// nothing lost or repeated while a stream opens, terminal statuses, heartbeats with lease
// renewal, and clean-up on disconnect, error and shutdown.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { AppError, createLogger, isAppError, type BroadcastOptions, type EventLog, type EventRecord } from "@icv/platform";
import { MemoryConnectionLimiter, type ConnectionLimiter } from "../src/sse/connection-limiter.ts";
import { SseHub, type StreamState } from "../src/sse/hub.ts";
import { waitFor } from "../../../test/support/expect-error.ts";

const T = "ten_A";

/** An EventLog whose broadcast the test drives by hand. */
class FakeEventLog implements EventLog {
  readonly transport = "postgres";
  listener?: BroadcastOptions;
  closed = false;
  async consume(): Promise<never> {
    throw new Error("not used");
  }
  async broadcast(opts: BroadcastOptions) {
    this.listener = opts;
    return { close: async () => void (this.closed = true) };
  }
  async close() {}
  emit(e: EventRecord) {
    this.listener!.onEvent(e);
  }
}

let n = 0;
const evtId = () => `evt_01K${String(++n).padStart(23, "0")}`;

function statusEvent(verificationId: string, status: string, previous: string | null, id = evtId(), tenantId = T): EventRecord {
  return {
    id,
    aggregateType: "verification",
    aggregateId: verificationId,
    eventType: "verification.status_changed",
    tenantId,
    environment: "test",
    payload: {
      verification_id: verificationId,
      type: "phone",
      channel: "sms",
      status,
      previous_status: previous,
      changed_at: "2026-01-01T00:00:00.000Z",
    },
    createdAt: new Date(),
  };
}

interface Setup {
  hub: SseHub;
  log: FakeEventLog;
  limiter: MemoryConnectionLimiter;
  url: string;
  /** The state each open reads, by verification id (a function may wait before answering). */
  states: Map<string, (after?: string) => Promise<StreamState>>;
}

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const f of cleanup.reverse()) await f();
  cleanup = [];
});

async function setup(opts: { heartbeatMs?: number; max?: number; limiter?: ConnectionLimiter } = {}): Promise<Setup> {
  const limiter = new MemoryConnectionLimiter();
  const hub = new SseHub({
    limiter: opts.limiter ?? limiter,
    maxPerTenant: opts.max ?? 10,
    heartbeatMs: opts.heartbeatMs ?? 60_000,
    logger: createLogger({ level: "silent" }),
  });
  const log = new FakeEventLog();
  await hub.listen(log);
  const states: Setup["states"] = new Map();
  const server = http.createServer((req, res) => {
    const u = new URL(req.url!, "http://x");
    const verificationId = u.pathname.slice(1);
    hub
      .open({
        req,
        res,
        tenantId: u.searchParams.get("tenant") ?? T,
        verificationId,
        lastEventId: req.headers["last-event-id"] as string | undefined,
        read: (after) => {
          const f = states.get(verificationId);
          if (!f) throw new AppError("not_found", "verification not found");
          return f(after);
        },
      })
      .catch((e) => {
        res
          .writeHead(isAppError(e) ? e.httpStatus : 500, { "content-type": "application/json" })
          .end(JSON.stringify({ code: isAppError(e) ? e.code : "internal_error" }));
      });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  cleanup.push(async () => {
    await hub.close();
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });
  return { hub, log, limiter, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, states };
}

interface Client {
  status: number;
  headers: Headers;
  /** Everything received so far, as sent. */
  text: string;
  ended: boolean;
  close(): void;
}

/** Opens a stream and collects the raw body. */
async function connect(url: string, headers: Record<string, string> = {}): Promise<Client> {
  const ac = new AbortController();
  const res = await fetch(url, { headers, signal: ac.signal });
  const c: Client = { status: res.status, headers: res.headers, text: "", ended: false, close: () => ac.abort() };
  (async () => {
    const dec = new TextDecoder();
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) c.text += dec.decode(chunk, { stream: true });
    } catch {
      // aborted
    }
    c.ended = true;
  })();
  return c;
}

const until = (f: () => boolean, ms = 2000) => waitFor(async () => f(), ms, 5);

/** A stream on a verification in `status`, once it got `connected`. */
async function live(s: Setup, id: string, status = "pending"): Promise<Client> {
  s.states.set(id, state(status, evtId()));
  const c = await connect(`${s.url}/${id}`);
  await until(() => c.text.includes("event: connected"));
  return c;
}
const state =
  (status: string, lastEventId: string, events: StreamState["events"] = []) =>
  async () => ({ status, lastEventId, events });
const connected = (id: string, status: string, lastEventId: string) =>
  `id: ${lastEventId}\nevent: connected\ndata: {"verification_id":"${id}","status":"${status}"}\n\n`;
const changed = (e: EventRecord) =>
  `id: ${e.id}\nevent: status_changed\ndata: ${JSON.stringify({ verification_id: e.aggregateId, status: e.payload.status, previous_status: e.payload.previous_status, changed_at: e.payload.changed_at })}\n\n`;

describe("SseHub", () => {
  it("sends connected first, then the same serialized event to every stream of the verification and nothing to others", async () => {
    const s = await setup();
    const created = evtId();
    s.states.set("ver_1", state("pending", created));
    s.states.set("ver_2", state("pending", created));
    const [a, b, other] = [await connect(`${s.url}/ver_1`), await connect(`${s.url}/ver_1`), await connect(`${s.url}/ver_2`)];
    expect(a.headers.get("content-type")).toBe("text/event-stream");
    expect(a.headers.get("cache-control")).toBe("no-cache");
    expect(a.headers.get("x-accel-buffering")).toBe("no");
    await until(() => [a, b, other].every((c) => c.text.includes("event: connected")));
    expect(a.text).toBe(`retry: 3000\n\n${connected("ver_1", "pending", created)}`);
    expect(s.hub.size).toBe(3);

    const e = statusEvent("ver_1", "verified", "pending");
    s.log.emit({ ...e, eventType: "verification.completed", id: evtId() }); // not an SSE event
    s.log.emit(statusEvent("ver_9", "verified", "pending")); // nobody listens: dropped
    s.log.emit(e);
    await until(() => a.text.endsWith(changed(e)) && b.text.endsWith(changed(e)));
    expect(a.text).toBe(b.text);
    expect(other.text).toBe(`retry: 3000\n\n${connected("ver_2", "pending", created)}`);
    // delivered twice (at-least-once transport): sent once
    s.log.emit(e);
    await new Promise((r) => setTimeout(r, 50));
    expect(a.text.split("event: status_changed").length - 1).toBe(1);
    // a verified verification's stream stays open
    expect(a.ended).toBe(false);
  });

  it("adds verified_at and proof when verified, revoked_at and revoked_reason when revoked, and ends the stream after a terminal status, freeing its slot", async () => {
    const s = await setup();
    const c = await live(s, "ver_1");
    expect(s.limiter.held(T)).toBe(1);
    const verified = statusEvent("ver_1", "verified", "pending");
    verified.payload = {
      ...verified.payload,
      verified_at: "2026-01-01T00:00:00.000Z",
      proof: { token: "x", expires_at: "2026-02-01T00:00:00.000Z" },
      revoked_reason: "not shown",
    };
    s.log.emit(verified);
    await until(() => c.text.includes(verified.id));
    expect(c.text).toContain(
      `id: ${verified.id}\nevent: status_changed\ndata: {"verification_id":"ver_1","status":"verified","previous_status":"pending","changed_at":"2026-01-01T00:00:00.000Z","verified_at":"2026-01-01T00:00:00.000Z","proof":{"token":"x","expires_at":"2026-02-01T00:00:00.000Z"}}\n\n`,
    );
    const revoked = statusEvent("ver_1", "revoked", "verified");
    revoked.payload = { ...revoked.payload, revoked_at: "2026-01-02T00:00:00.000Z", revoked_reason: "fraud", proof: { token: "x" } };
    s.log.emit(revoked);
    await until(() => c.ended);
    expect(c.text).toContain(
      `id: ${revoked.id}\nevent: status_changed\ndata: {"verification_id":"ver_1","status":"revoked","previous_status":"verified","changed_at":"2026-01-01T00:00:00.000Z","revoked_at":"2026-01-02T00:00:00.000Z","revoked_reason":"fraud"}\n\n`,
    );
    expect(s.hub.size).toBe(0);
    expect(s.limiter.held(T)).toBe(0);
  });

  it("loses nothing while a stream opens: events that arrive during the read come after the replay, without repeats", async () => {
    const s = await setup();
    const [e1, e2, e3] = [statusEvent("ver_1", "pending", null), statusEvent("ver_1", "verified", "pending"), statusEvent("ver_1", "revoked", "verified")];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let askedAfter: string | undefined;
    s.states.set("ver_1", async (after) => {
      askedAfter = after;
      await gate;
      // the read saw e2 already; e3 committed after it
      return { status: "verified", lastEventId: e2.id, events: [{ id: e2.id, eventType: e2.eventType, payload: e2.payload }] };
    });
    // the headers go out only once the read is done
    const opening = connect(`${s.url}/ver_1`, { "last-event-id": e1.id });
    await until(() => s.hub.size === 1);
    // published while the read runs: e2 (also in the replay) and e3 (only live)
    s.log.emit(e2);
    s.log.emit(e3);
    release();
    const c = await opening;
    await until(() => c.ended);
    expect(askedAfter).toBe(e1.id);
    expect(c.text).toBe(`retry: 3000\n\n${connected("ver_1", "verified", e2.id)}${changed(e2)}${changed(e3)}`);
    expect(s.limiter.held(T)).toBe(0);
  });

  it("a stream opened on a terminal verification sends connected and ends; a reconnect after the end is 204", async () => {
    const s = await setup();
    const before = evtId();
    const failed = statusEvent("ver_1", "failed", "pending");
    s.states.set("ver_1", async (after) => ({
      status: "failed",
      lastEventId: failed.id,
      events: after && after >= failed.id ? [] : [{ id: failed.id, eventType: failed.eventType, payload: failed.payload }],
    }));
    const c = await connect(`${s.url}/ver_1`);
    await until(() => c.ended);
    expect(c.text).toBe(`retry: 3000\n\n${connected("ver_1", "failed", failed.id)}`);
    const missed = await connect(`${s.url}/ver_1`, { "last-event-id": before });
    await until(() => missed.ended);
    expect(missed.text.endsWith(changed(failed))).toBe(true);
    const done = await connect(`${s.url}/ver_1`, { "last-event-id": failed.id });
    expect(done.status).toBe(204);
    expect(s.hub.size).toBe(0);
    expect(s.limiter.held(T)).toBe(0);
  });

  it("refuses past the tenant's limit, frees a slot the moment a client disconnects, and releases it when the read fails", async () => {
    const s = await setup({ max: 2 });
    s.states.set("ver_1", state("pending", evtId()));
    const a = await connect(`${s.url}/ver_1`);
    const b = await connect(`${s.url}/ver_1`);
    await until(() => a.text.includes("connected") && b.text.includes("connected"));
    const refused = await connect(`${s.url}/ver_1`);
    expect(refused.status).toBe(429);
    await until(() => refused.ended);
    expect(JSON.parse(refused.text)).toEqual({ code: "too_many_connections" });
    const otherTenant = await connect(`${s.url}/ver_1?tenant=ten_B`);
    expect(otherTenant.status).toBe(200);
    otherTenant.close();

    a.close();
    await until(() => s.limiter.held(T) === 1);
    expect(s.hub.size).toBe(1);
    // an event for it after the disconnect goes only to the stream still open
    const e = statusEvent("ver_1", "verified", "pending");
    s.log.emit(e);
    await until(() => b.text.endsWith(changed(e)));

    const missing = await connect(`${s.url}/ver_404`);
    expect(missing.status).toBe(404);
    expect(s.limiter.held(T)).toBe(1);
    expect(s.hub.size).toBe(1);
  });

  it("ignores an event of another tenant for the same id", async () => {
    const s = await setup();
    const c = await live(s, "ver_1");
    s.log.emit(statusEvent("ver_1", "verified", "pending", evtId(), "ten_other"));
    await new Promise((r) => setTimeout(r, 50));
    expect(c.text).not.toContain("status_changed");
  });

  it("sends a heartbeat comment per period from one shared timer and renews the open streams' leases", async () => {
    const refreshed: [string, string[]][] = [];
    const base = new MemoryConnectionLimiter();
    const limiter: ConnectionLimiter = {
      acquire: (t, id, max) => base.acquire(t, id, max),
      release: (t, id) => base.release(t, id),
      refresh: async (t, ids) => void refreshed.push([t, ids]),
    };
    const s = await setup({ heartbeatMs: 100, limiter });
    const c = await live(s, "ver_1");
    const start = Date.now();
    await until(() => c.text.split(": heartbeat\n\n").length - 1 >= 3, 1000);
    expect(Date.now() - start).toBeGreaterThanOrEqual(150);
    expect(refreshed.length).toBeGreaterThanOrEqual(2);
    expect(refreshed.every(([t, ids]) => t === T && ids.length === 1)).toBe(true);
    c.close();
    await until(() => s.hub.size === 0);
    const count = refreshed.length;
    await new Promise((r) => setTimeout(r, 250));
    expect(refreshed.length).toBe(count);
  });

  it("close() ends every stream, stops listening and refuses new streams", async () => {
    const s = await setup();
    const c = await live(s, "ver_1");
    await s.hub.close();
    await until(() => c.ended);
    expect(s.log.closed).toBe(true);
    expect(s.hub.size).toBe(0);
    expect(s.limiter.held(T)).toBe(0);
    const late = await connect(`${s.url}/ver_1`);
    expect(late.status).toBe(503);
  });
});
