// The hosted page's stream hub on a real HTTP server with a fake event log: an event of the
// request or of one of its assets' current verifications makes the stream re-read and send the
// state when it changed; others are ignored; a final state ends the stream; reads never overlap.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { AppError, createLogger, isAppError, type BroadcastOptions, type EventLog, type EventRecord } from "@icv/platform";
import { HostedHub, type HostedState } from "../src/hosted/hub.ts";
import { waitFor } from "../../../test/support/expect-error.ts";

class FakeEventLog implements EventLog {
  readonly transport = "postgres";
  listener?: BroadcastOptions;
  async consume(): Promise<never> {
    throw new Error("not used");
  }
  async broadcast(opts: BroadcastOptions) {
    this.listener = opts;
    return { close: async () => undefined };
  }
  async close() {}
  emit(aggregateType: string, aggregateId: string) {
    const e: EventRecord = {
      id: `evt_${Math.random()}`,
      aggregateType,
      aggregateId,
      eventType: "x",
      tenantId: "t",
      environment: "test",
      payload: {},
      createdAt: new Date(),
    };
    this.listener!.onEvent(e);
  }
}

const state = (status: string, verifications: (string | null)[], extra: Record<string, unknown> = {}): HostedState => ({
  id: "vreq_1",
  status,
  token_expired: false,
  assets: verifications.map((v) => ({ verification_id: v })),
  ...extra,
});

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const f of cleanup.reverse()) await f();
  cleanup = [];
});

async function setup(read: () => Promise<HostedState>) {
  const hub = new HostedHub({ heartbeatMs: 60_000, logger: createLogger({ level: "silent" }) });
  const log = new FakeEventLog();
  await hub.listen(log);
  const server = http.createServer((_req, res) => {
    hub.open(res, "vreq_1", read).catch((e) => res.writeHead(isAppError(e) ? e.httpStatus : 500).end(String(e.code)));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  cleanup.push(async () => {
    await hub.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { hub, log, url };
}

/** Opens the stream and collects its text. */
async function stream(url: string) {
  const res = await fetch(url);
  const out = { status: res.status, text: "", ended: false };
  if (res.status !== 200) return out;
  const reader = res.body!.getReader();
  void (async () => {
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) return void (out.ended = true);
      out.text += new TextDecoder().decode(value);
    }
  })();
  return out;
}
const count = (text: string, re: RegExp) => (text.match(re) ?? []).length;

describe("HostedHub", () => {
  it("re-reads on events of the request and of its current verifications, sends only changes, ends when final", async () => {
    let current = state("pending", ["ver_a", null]);
    let reads = 0;
    const { log, url } = await setup(async () => (reads++, current));
    const s = await stream(url);
    await waitFor(async () => /event: request/.test(s.text) && reads >= 2, 3000);
    expect(s.text).toMatch(/^retry: \d+\n\nevent: connected\ndata: \{"request_id":"vreq_1","status":"pending"\}\n\n/);
    expect(count(s.text, /event: request/g)).toBe(1);

    const before = reads;
    log.emit("verification", "ver_other"); // not this request's
    log.emit("verification_request", "vreq_2");
    await new Promise((r) => setTimeout(r, 50));
    expect(reads).toBe(before);

    log.emit("verification", "ver_a"); // unchanged state: read, nothing sent
    await waitFor(async () => reads > before, 3000);
    expect(count(s.text, /event: request/g)).toBe(1);

    current = state("pending", ["ver_a", "ver_b"]); // the second asset started: now followed
    log.emit("verification_request", "vreq_1");
    await waitFor(async () => count(s.text, /event: request/g) === 2, 3000);
    current = state("completed", ["ver_a", "ver_b"]);
    log.emit("verification", "ver_b");
    await waitFor(async () => s.ended, 3000);
    expect(s.text).toMatch(/event: request\ndata: \{"id":"vreq_1","status":"completed"/);
  });

  it("coalesces events that arrive during a read into one more read", async () => {
    let reads = 0;
    let release: () => void = () => undefined;
    const { log, url } = await setup(async () => {
      reads++;
      if (reads === 3) await new Promise<void>((r) => (release = r));
      return state("pending", ["ver_a"]);
    });
    await stream(url);
    await waitFor(async () => reads === 2, 3000);
    log.emit("verification", "ver_a"); // read 3 starts and waits
    await waitFor(async () => reads === 3, 3000);
    for (let i = 0; i < 5; i++) log.emit("verification", "ver_a");
    release();
    await new Promise((r) => setTimeout(r, 100));
    expect(reads).toBe(4);
  });

  it("answers the read's error before any byte, and a final state at once ends the stream", async () => {
    const missing = await setup(async () => {
      throw new AppError("not_found", "verification request not found");
    });
    expect((await stream(missing.url)).status).toBe(404);
    const done = await setup(async () => state("expired", [], { token_expired: true }));
    const s = await stream(done.url);
    await waitFor(async () => s.ended, 3000);
    expect(count(s.text, /event: request/g)).toBe(1);
  });
});
