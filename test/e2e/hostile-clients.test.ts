// Clients that hold connections (issue 28, item 2), over raw sockets against the gateway as
// `npm start` runs it: a declared body over the limit is answered 413 at once without reading it,
// a body (or headers) that stop arriving are dropped with 408 after a short, configurable
// timeout, an idle kept-alive connection is closed, and one client address holds at most
// HTTP_MAX_CONNECTIONS_PER_IP connections. And (item 7) the probes' routes are not limited like
// API traffic: a burst from the kubelet's address never answers 429.
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { useStack } from "../support/use-stack.ts";

// long enough that the connections the cap test holds outlive it on a busy machine, short enough for CI
const REQUEST_TIMEOUT_MS = 4_000;
const HEADERS_TIMEOUT_MS = 3_000;
const KEEP_ALIVE_MS = 3_000;
const PER_IP = 4;
const stack = useStack({
  HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
  HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
  HTTP_KEEP_ALIVE_TIMEOUT_MS: String(KEEP_ALIVE_MS),
  HTTP_MAX_CONNECTIONS_PER_IP: String(PER_IP),
  // public routes: 6 requests per minute per client address
  RATE_LIMIT_PER_MINUTE: "1",
});

interface Conn {
  socket: net.Socket;
  /** Everything the server sent so far. */
  text(): string;
  /** Resolves when the server closed the connection, with how long it stayed open. */
  closed: Promise<number>;
}

const sockets: net.Socket[] = [];
afterEach(() => {
  for (const s of sockets.splice(0)) s.destroy();
});

/** A raw connection from `localAddress` (each test its own loopback address, so the per-IP cap of one never meets another's). */
async function connect(localAddress: string): Promise<Conn> {
  const u = new URL(stack.url);
  const socket = net.connect({ host: u.hostname, port: Number(u.port), localAddress });
  sockets.push(socket);
  await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
  const opened = performance.now();
  let got = "";
  socket.on("data", (c: Buffer) => {
    got += c.toString("latin1");
  });
  socket.on("error", () => undefined); // a reset after the answer is how some of these end
  const closed = new Promise<number>((resolve) => socket.once("close", () => resolve(performance.now() - opened)));
  return { socket, text: () => got, closed };
}

/** Waits until `check` holds, polling (the machine may be busy), or fails after `ms`. */
async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const status = (text: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
const errorCode = (text: string) => (JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4)) as { error: { code: string } }).error.code;
const hostedStart = "/api/v1/verify/request/vreq_01J0000000000000000000TEST/assets/0/start";

describe("a declared body over the limit", () => {
  it.each([
    ["20,000 bytes", "20000"],
    ["10^12 bytes", "1000000000000"],
  ])("(%s) on a public route is answered 413 at once, without waiting for the body", async (_name, length) => {
    const c = await connect("127.0.0.11");
    const t0 = performance.now();
    c.socket.write(`POST ${hostedStart} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n{"a":`);
    await until(() => c.text().includes("\r\n\r\n{"), 2_000, "the 413");
    expect(performance.now() - t0).toBeLessThanOrEqual(2_000);
    expect(status(c.text())).toBe(413);
    expect(errorCode(c.text())).toBe("payload_too_large");
    expect(c.text()).toMatch(/\r\nconnection: close\r\n/i);
    // and the connection is not held: the server closes it
    expect(await c.closed).toBeLessThanOrEqual(2_000);
  });

  it("on a keyed route too, before the key is even looked up", async () => {
    const c = await connect("127.0.0.12");
    const t0 = performance.now();
    c.socket.write(
      `POST /api/v1/verifications HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer pk_test_x\r\nContent-Type: application/json\r\nContent-Length: 10241\r\n\r\n`,
    );
    await until(() => c.text().includes("\r\n\r\n{"), 2_000, "the 413");
    expect(performance.now() - t0).toBeLessThanOrEqual(2_000);
    expect(status(c.text())).toBe(413);
    await c.closed;
  });
});

describe("a body that stops arriving", () => {
  it("is dropped with 408 after HTTP_REQUEST_TIMEOUT_MS, not Node's 300 s", async () => {
    const c = await connect("127.0.0.13");
    c.socket.write(`POST ${hostedStart} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"identifier":`);
    const held = await c.closed;
    expect(status(c.text())).toBe(408);
    expect(errorCode(c.text())).toBe("request_timeout");
    expect(held).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 100);
    expect(held).toBeLessThanOrEqual(REQUEST_TIMEOUT_MS + 5_000); // the server checks about once a second
  });

  it("headers that stop arriving are dropped with 408 after HTTP_HEADERS_TIMEOUT_MS", async () => {
    const c = await connect("127.0.0.14");
    c.socket.write("GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ");
    const held = await c.closed;
    expect(status(c.text())).toBe(408);
    expect(held).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 100);
    expect(held).toBeLessThanOrEqual(HEADERS_TIMEOUT_MS + 5_000);
  });
});

describe("a connection that sends nothing", () => {
  it("is dropped after HTTP_HEADERS_TIMEOUT_MS (one client cannot hold sockets by opening them)", async () => {
    const c = await connect("127.0.0.18");
    const held = await c.closed;
    expect(held).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 100);
    expect(held).toBeLessThanOrEqual(HEADERS_TIMEOUT_MS + 5_000);
  });
});

describe("an idle kept-alive connection", () => {
  it("is closed by the server after HTTP_KEEP_ALIVE_TIMEOUT_MS", async () => {
    const c = await connect("127.0.0.15");
    const t0 = performance.now();
    c.socket.write("GET /api/v1 HTTP/1.1\r\nHost: x\r\n\r\n");
    await until(() => status(c.text()) === 200, 5_000, "the answer");
    expect(c.text()).toMatch(/\r\nkeep-alive: timeout=3\r\n/i);
    await c.closed;
    const held = performance.now() - t0;
    expect(held).toBeGreaterThanOrEqual(KEEP_ALIVE_MS - 100);
    expect(held).toBeLessThanOrEqual(KEEP_ALIVE_MS + 5_000);
  });
});

describe("connections per client address", () => {
  it(`holds at most ${PER_IP} from one address; the next is answered 429 and closed; another address is not affected`, async () => {
    const held: Conn[] = [];
    for (let i = 0; i < PER_IP; i++) held.push(await connect("127.0.0.16"));
    const extra = await connect("127.0.0.16");
    await extra.closed;
    expect(status(extra.text())).toBe(429);
    expect(errorCode(extra.text())).toBe("too_many_connections");
    // the ones held still serve
    held[0].socket.write("GET /api/v1 HTTP/1.1\r\nHost: x\r\n\r\n");
    await until(() => status(held[0].text()) === 200, 5_000, "an answer on a held connection");
    // another address is served meanwhile
    const other = await connect("127.0.0.17");
    other.socket.write("GET /api/v1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    await other.closed;
    expect(status(other.text())).toBe(200);
    // one closed: room for one more
    held[1].socket.destroy();
    await held[1].closed;
    let again: Conn | undefined;
    const end = Date.now() + 5_000;
    for (;;) {
      again = await connect("127.0.0.16");
      again.socket.write("GET /api/v1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
      await again.closed;
      if (status(again.text()) === 200 || Date.now() > end) break;
    }
    expect(status(again.text())).toBe(200);
    for (const c of held) c.socket.destroy();
  });
});

describe("the probes' routes", () => {
  it("answer a burst from one address without 429, while the other public routes are limited per address", async () => {
    const get = (path: string) => fetch(`${stack.url}${path}`).then(async (r) => ({ status: r.status, body: await r.text() }));
    // one after another: on one kept-alive connection (the connection cap of this file is 4)
    const health: { status: number; body: string }[] = [];
    for (let i = 0; i < 20; i++) health.push(await get("/health"));
    expect(health.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(JSON.parse(health[0].body)).toMatchObject({ status: "healthy" });
    const info: number[] = [];
    for (let i = 0; i < 20; i++) info.push((await get("/api/v1")).status);
    expect(info).toEqual(Array(20).fill(200));
    // the JWKS is public API traffic: limited to 6 a minute per address
    const jwks: number[] = [];
    for (let i = 0; i < 8; i++) jwks.push((await get("/.well-known/jwks.json")).status);
    expect(jwks.filter((s) => s === 429).length).toBeGreaterThan(0);
  });
});
