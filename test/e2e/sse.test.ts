// Server-sent events of a verification through the real gateway: connected then status_changed,
// replay with Last-Event-ID, the end after a terminal status, heartbeats, 404 outside the
// tenant's scope, the per-tenant connection limit, and a real EventSource client reconnecting.
import { EventSource } from "eventsource";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { beforeAll, describe, expect, it } from "vitest";
import { otherCode, sentCode } from "../support/sent-code.ts";
import { api, type TenantKeys } from "../support/stack.ts";
import { useStack } from "../support/use-stack.ts";
import { expectError, waitFor, type ApiResponse } from "../support/expect-error.ts";

const HEARTBEAT_MS = 300;
const stack = useStack({ SSE_HEARTBEAT_MS: String(HEARTBEAT_MS) });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/**
 * Waits `ms`, then (on a busy machine, where the stack shares this process's event loop with the
 * test and a stall can hold the socket's bytes past the timer) until `done()` or 10 s more: the
 * default heartbeat is 30 s, so heartbeats seen within that still prove SSE_HEARTBEAT_MS applies.
 */
async function waitAtLeast(ms: number, done: () => boolean): Promise<void> {
  await sleep(ms);
  for (const end = Date.now() + 10_000; !done() && Date.now() < end; ) await sleep(25);
}

interface Message {
  event: string;
  id?: string;
  data: any;
  at: number;
}

interface Stream {
  status: number;
  headers: Headers;
  messages: Message[];
  comments: string[];
  retry?: number;
  /** True once the server ended the response. */
  ended: boolean;
  /** The next message (after those already taken with next). */
  next(timeoutMs?: number): Promise<Message>;
  close(): void;
}

/** Opens a stream with fetch and parses text/event-stream as it arrives; a non-200 answer comes back as an ApiResponse. */
async function open(path: string, key: string, headers: Record<string, string> = {}): Promise<Stream | ApiResponse> {
  const ac = new AbortController();
  const res = await fetch(stack.url + path, {
    headers: { authorization: `Bearer ${key}`, accept: "text/event-stream", ...headers },
    signal: ac.signal,
  });
  if (res.status !== 200) {
    // error bodies are JSON; a 204 has none
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text.startsWith("{") ? JSON.parse(text) : undefined, text };
  }
  let taken = 0;
  const s: Stream = {
    status: res.status,
    headers: res.headers,
    messages: [],
    comments: [],
    ended: false,
    async next(timeoutMs = 2000) {
      await waitFor(async () => s.messages.length > taken || s.ended, timeoutMs, 5);
      if (s.messages.length <= taken) throw new Error(`no message within ${timeoutMs} ms (ended: ${s.ended})`);
      return s.messages[taken++];
    },
    close: () => ac.abort(),
  };
  (async () => {
    const decoder = new TextDecoder();
    let buf = "";
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buf += decoder.decode(chunk, { stream: true });
        let cut: number;
        while ((cut = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          const m: Partial<Message> = {};
          for (const line of block.split("\n")) {
            if (line.startsWith(":")) s.comments.push(line);
            else if (line.startsWith("retry: ")) s.retry = Number(line.slice(7));
            else if (line.startsWith("id: ")) m.id = line.slice(4);
            else if (line.startsWith("event: ")) m.event = line.slice(7);
            else if (line.startsWith("data: ")) m.data = JSON.parse(line.slice(6));
          }
          if (m.event) s.messages.push({ ...(m as Message), at: Date.now() });
        }
      }
    } catch {
      // aborted by close()
    }
    s.ended = true;
  })();
  return s;
}

const isStream = (s: Stream | ApiResponse): s is Stream => "messages" in s;
const stream = async (path: string, key: string, headers?: Record<string, string>) => {
  const s = await open(path, key, headers);
  if (!isStream(s)) throw new Error(`expected a stream, got ${s.status}: ${s.text}`);
  return s;
};
const ended = (s: Stream) => waitFor(async () => s.ended, 2000);
const events = (id: string) => `/api/v1/verifications/${id}/events`;

async function createPhone(key: string, identifier = "+37069100001", delivery?: "outbound") {
  const r = await api(stack.url, key).post("/api/v1/verifications", { type: "phone", channel: "sms", identifier, delivery });
  expect(r.status).toBe(201);
  return r.body as { id: string; challenge: { code: string } };
}

describe("GET /verifications/{id}/events", () => {
  let t: TenantKeys;
  beforeAll(async () => {
    t = await stack.tenant("SSE");
  });

  it("sends connected, then status_changed within a second of test-verify; stays open on verified and ends after revoke", async () => {
    const c = api(stack.url, t.testKey);
    const v = await createPhone(t.testKey);
    const s = await stream(events(v.id), t.testKey);
    expect(s.headers.get("content-type")).toBe("text/event-stream");
    expect(s.headers.get("cache-control")).toBe("no-cache");
    expect(s.headers.get("x-accel-buffering")).toBe("no");
    // opening a stream is a keyed request like any other: it counts against the rate limit
    expect(s.headers.get("x-ratelimit-limit")).toBe("100");

    const connected = await s.next();
    expect(connected).toMatchObject({ event: "connected", data: { verification_id: v.id, status: "pending" } });
    expect(connected.id).toMatch(/^evt_[0-9A-Z]{26}$/);
    expect(s.retry).toBeGreaterThan(0);

    const verified = await c.post(`/api/v1/verifications/${v.id}/test-verify`);
    expect(verified.status).toBe(200);
    const sent = Date.now();
    const changed = await s.next();
    expect(changed.at - sent).toBeLessThan(1000);
    expect(changed.event).toBe("status_changed");
    expect(changed.id! > connected.id!).toBe(true);
    expect(changed.data).toEqual({
      verification_id: v.id,
      status: "verified",
      previous_status: "pending",
      changed_at: verified.body.verified_at,
      verified_at: verified.body.verified_at,
      proof: { token: verified.body.proof_token, expires_at: verified.body.proof_expires_at, identifier_salt: verified.body.identifier_salt },
    });

    // verified is not the end: the stream stays open (heartbeats keep coming)
    const beats = s.comments.length;
    await waitAtLeast(2 * HEARTBEAT_MS + 100, () => s.comments.length > beats);
    expect(s.ended).toBe(false);
    expect(s.comments.length).toBeGreaterThan(beats);

    const revoked = await c.post(`/api/v1/proofs/${v.id}/revoke`, { reason: "fraud" });
    expect(revoked.status).toBe(200);
    const last = await s.next();
    expect(last).toMatchObject({
      event: "status_changed",
      data: {
        verification_id: v.id,
        status: "revoked",
        previous_status: "verified",
        revoked_at: revoked.body.revoked_at,
        revoked_reason: "fraud",
      },
    });
    expect(await ended(s)).toBe(true);
    expect(s.messages.map((m) => m.event)).toEqual(["connected", "status_changed", "status_changed"]);
  });

  it("sends a heartbeat comment every SSE_HEARTBEAT_MS", async () => {
    const v = await createPhone(t.testKey, "+37069100002");
    const s = await stream(events(v.id), t.testKey);
    await s.next();
    await waitAtLeast(3 * HEARTBEAT_MS + 150, () => s.comments.filter((c) => c === ": heartbeat").length >= 2);
    expect(s.comments.filter((c) => c === ": heartbeat").length).toBeGreaterThanOrEqual(2);
    expect(s.messages).toHaveLength(1);
    s.close();
  });

  it("ends after the 5th wrong code (failed); a stream opened on a failed verification sends connected and ends", async () => {
    const c = api(stack.url, t.testKey);
    // outbound delivery: submit checks the code the service sent (a reverse-OTP code is never submitted)
    const v = await createPhone(t.testKey, "+37069100003", "outbound");
    const s = await stream(events(v.id), t.testKey);
    await s.next();
    const wrong = otherCode(await sentCode(c, v.id));
    for (let i = 0; i < 5; i++) expect((await c.post(`/api/v1/verifications/${v.id}/submit`, { challenge_code: wrong })).status).toBe(400);
    expect(await s.next()).toMatchObject({ event: "status_changed", data: { status: "failed", previous_status: "pending" } });
    expect(await ended(s)).toBe(true);

    const again = await stream(events(v.id), t.testKey);
    expect(await again.next()).toMatchObject({ event: "connected", data: { verification_id: v.id, status: "failed" } });
    expect(await ended(again)).toBe(true);
    expect(again.messages).toHaveLength(1);
  });

  it("replays only what was missed after Last-Event-ID (header or lastEventId query parameter)", async () => {
    const c = api(stack.url, t.testKey);
    const v = await createPhone(t.testKey, "+37069100004");
    const first = await stream(events(v.id), t.testKey);
    const connected = await first.next();
    first.close();

    // missed while disconnected
    const verified = await c.post(`/api/v1/verifications/${v.id}/test-verify`);
    expect(verified.status).toBe(200);
    const back = await stream(events(v.id), t.testKey, { "last-event-id": connected.id! });
    const hello = await back.next();
    expect(hello).toMatchObject({ event: "connected", data: { verification_id: v.id, status: "verified" } });
    const missed = await back.next();
    expect(missed).toMatchObject({
      event: "status_changed",
      data: { status: "verified", previous_status: "pending", proof: { token: verified.body.proof_token } },
    });
    expect(missed.id! > connected.id!).toBe(true);
    await new Promise((r) => setTimeout(r, 200));
    expect(back.messages).toHaveLength(2);
    back.close();

    // up to date: nothing to replay
    const current = await stream(`${events(v.id)}?lastEventId=${hello.id}`, t.testKey);
    expect(await current.next()).toMatchObject({ event: "connected", id: hello.id, data: { status: "verified" } });
    await new Promise((r) => setTimeout(r, 200));
    expect(current.messages).toHaveLength(1);
    expect(current.ended).toBe(false);
    current.close();

    // the end missed: replayed, then the stream ends; a reconnect after the end is 204
    expect((await c.post(`/api/v1/proofs/${v.id}/revoke`, { reason: "user_request" })).status).toBe(200);
    const tail = await stream(events(v.id), t.testKey, { "last-event-id": missed.id! });
    expect((await tail.next()).data.status).toBe("revoked");
    const end = await tail.next();
    expect(end).toMatchObject({
      event: "status_changed",
      data: { status: "revoked", previous_status: "verified", revoked_reason: "user_request" },
    });
    expect(await ended(tail)).toBe(true);
    const done = await open(events(v.id), t.testKey, { "last-event-id": end.id! });
    expect(done.status).toBe(204);
    // a malformed Last-Event-ID is refused before the stream opens
    expectError((await open(events(v.id), t.testKey, { "last-event-id": "nonsense" })) as ApiResponse, 400, "validation_error");
  });

  it("answers 404 for another tenant's or environment's verification, and 401 without a key", async () => {
    const other = await stack.tenant("SSE other");
    const v = await createPhone(t.testKey, "+37069100005");
    expectError((await open(events(v.id), other.testKey)) as ApiResponse, 404, "not_found");
    expectError((await open(events(v.id), t.liveKey)) as ApiResponse, 404, "not_found");
    expectError((await open(events("ver_01JAAAAAAAAAAAAAAAAAAAAAAA"), t.testKey)) as ApiResponse, 404, "not_found");
    const res = await fetch(stack.url + events(v.id));
    expect(res.status).toBe(401);
  });
});

describe("connection limit", () => {
  it("allows 10 streams per tenant (live and test together), refuses the 11th with 429 too_many_connections, and frees a slot at once on close", async () => {
    const t = await stack.tenant("SSE limit");
    const other = await stack.tenant("SSE limit other");
    const test = await createPhone(t.testKey, "+37069100006");
    const live = await api(stack.url, t.liveKey).post("/api/v1/verifications", {
      type: "wallet",
      channel: "ethereum",
      identifier: privateKeyToAccount(generatePrivateKey()).address,
    });
    expect(live.status).toBe(201);
    const streams: Stream[] = [];
    for (let i = 0; i < 6; i++) streams.push(await stream(events(test.id), t.testKey));
    for (let i = 0; i < 4; i++) streams.push(await stream(events(live.body.id), t.liveKey));
    for (const s of streams) expect((await s.next()).event).toBe("connected");

    const refused = expectError((await open(events(test.id), t.testKey)) as ApiResponse, 429, "too_many_connections");
    expect(refused.message).toContain("10");
    expectError((await open(events(live.body.id), t.liveKey)) as ApiResponse, 429, "too_many_connections");

    // another tenant has slots of its own
    const mine = await createPhone(other.testKey, "+37069100007");
    const theirs = await stream(events(mine.id), other.testKey);
    expect((await theirs.next()).event).toBe("connected");
    theirs.close();

    // closing one frees its slot as soon as the gateway sees the connection close
    streams.pop()!.close();
    const closedAt = Date.now();
    let reopened: Stream | ApiResponse | undefined;
    await waitFor(
      async () => {
        reopened = await open(events(test.id), t.testKey);
        return reopened.status === 200;
      },
      1000,
      20,
    );
    expect(reopened!.status).toBe(200);
    expect(Date.now() - closedAt).toBeLessThan(500);
    streams.push(reopened as Stream);
    expectError((await open(events(test.id), t.testKey)) as ApiResponse, 429, "too_many_connections");

    // a stream that ended by itself (terminal status) frees its slot too
    const c = api(stack.url, t.testKey);
    expect((await c.post(`/api/v1/verifications/${test.id}/test-verify`)).status).toBe(200);
    expect((await c.post(`/api/v1/proofs/${test.id}/revoke`, { reason: "other" })).status).toBe(200);
    for (const s of streams.slice(0, 6)) expect(await ended(s)).toBe(true);
    const after = await stream(events(live.body.id), t.liveKey);
    expect((await after.next()).event).toBe("connected");
    after.close();
    for (const s of streams) s.close();
  });
});

describe("a browser-style EventSource client", () => {
  it("receives the events and, after the connection drops, reconnects with Last-Event-ID and gets what it missed", async () => {
    const t = await stack.tenant("SSE EventSource");
    const c = api(stack.url, t.testKey);
    const v = await createPhone(t.testKey, "+37069100008");
    const sentIds: (string | null)[] = [];
    let drop: (() => void) | undefined;
    // the fetch EventSource uses: adds the key, records Last-Event-ID, and lets the test cut the connection
    const esFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const headers = new Headers(init?.headers);
      sentIds.push(headers.get("last-event-id"));
      headers.set("authorization", `Bearer ${t.testKey}`);
      const res = await fetch(input, { ...init, headers });
      if (res.status !== 200 || !res.body) return res;
      const reader = res.body.getReader();
      const body = new ReadableStream<Uint8Array>({
        start(ctrl) {
          drop = () => {
            reader.cancel().catch(() => undefined);
            ctrl.close();
          };
        },
        async pull(ctrl) {
          const r = await reader.read().catch(() => ({ done: true as const, value: undefined }));
          if (r.done) {
            try {
              ctrl.close();
            } catch {
              // already closed by drop()
            }
          } else ctrl.enqueue(r.value);
        },
      });
      return new Response(body, { status: res.status, headers: res.headers });
    };
    const es = new EventSource(stack.url + events(v.id), { fetch: esFetch });
    const got: { type: string; id: string; data: any }[] = [];
    const record = (e: MessageEvent) => got.push({ type: e.type, id: e.lastEventId, data: JSON.parse(e.data) });
    es.addEventListener("connected", record);
    es.addEventListener("status_changed", record);
    try {
      await waitFor(async () => got.length === 1, 2000);
      expect(got[0]).toMatchObject({ type: "connected", data: { status: "pending" } });

      // the connection drops; the status changes while the client waits to reconnect
      drop!();
      const verified = await c.post(`/api/v1/verifications/${v.id}/test-verify`);
      expect(verified.status).toBe(200);
      await waitFor(async () => got.length === 3, 6000);
      expect(sentIds).toEqual([null, got[0].id]);
      expect(got[1]).toMatchObject({ type: "connected", data: { status: "verified" } });
      expect(got[2]).toMatchObject({ type: "status_changed", data: { status: "verified", proof: { token: verified.body.proof_token } } });

      // the end: revoked arrives live; the client's next reconnect is told to stop (204)
      expect((await c.post(`/api/v1/proofs/${v.id}/revoke`, { reason: "other" })).status).toBe(200);
      await waitFor(async () => got.length === 4, 2000);
      expect(got[3]).toMatchObject({ type: "status_changed", data: { status: "revoked" } });
      await waitFor(async () => es.readyState === es.CLOSED, 6000);
      expect(es.readyState).toBe(es.CLOSED);
      expect(sentIds).toEqual([null, got[0].id, got[3].id]);
      expect(got).toHaveLength(4);
    } finally {
      es.close();
    }
  }, 20_000);
});
