// Kept-alive connections that the receiver closed (issue 28, item 3): an attempt that meets a
// pooled connection the receiver already dropped is sent again at once on a fresh connection,
// never counted as a failed attempt; a request on a fresh connection that fails is not sent
// twice; and idle pooled connections are closed before the common 5 s server keep-alive.
import net from "node:net";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createOutboundClient, OutboundError } from "../src/outbound.ts";

interface Receiver {
  url: string;
  /** Connections accepted so far. */
  connections: number;
  /** Complete requests answered (by path). */
  answered: string[];
  /** Times a connection was seen closed by the other side, with how long it had been idle. */
  clientClosedAfterIdleMs: number[];
  close(): Promise<void>;
}

const receivers: Receiver[] = [];
afterEach(async () => {
  for (const r of receivers.splice(0)) await r.close();
});

/**
 * A raw HTTP/1.1 receiver that keeps connections open (no Keep-Alive hint, as many servers
 * behind proxies answer). `onRequest(n, path)`: "answer", or "reset" to drop the connection
 * unanswered, as a receiver does whose idle timer fired as the request arrived; n counts the
 * requests of that connection from 1.
 */
async function receiver(onRequest: (n: number, path: string) => "answer" | "reset"): Promise<Receiver> {
  const sockets = new Set<net.Socket>();
  const r: Receiver = { url: "", connections: 0, answered: [], clientClosedAfterIdleMs: [], close: async () => undefined };
  const server = net.createServer((socket) => {
    sockets.add(socket);
    r.connections++;
    let n = 0;
    let buf = "";
    let idleSince = performance.now();
    socket.on("error", () => undefined);
    socket.on("end", () => {
      r.clientClosedAfterIdleMs.push(performance.now() - idleSince);
      socket.end();
    });
    socket.on("close", () => sockets.delete(socket));
    socket.on("data", (c: Buffer) => {
      buf += c.toString("latin1");
      for (;;) {
        const head = buf.indexOf("\r\n\r\n");
        if (head < 0) return;
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(buf.slice(0, head))?.[1] ?? 0);
        if (buf.length < head + 4 + length) return;
        const path = buf.slice(0, head).split(" ")[1];
        buf = buf.slice(head + 4 + length);
        n++;
        if (onRequest(n, path) === "reset") {
          socket.resetAndDestroy();
          return;
        }
        r.answered.push(path);
        socket.write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok");
        idleSince = performance.now();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  r.close = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });
  receivers.push(r);
  return r;
}

const post = (client: ReturnType<typeof createOutboundClient>, url: string) =>
  client.request(url, { method: "POST", body: '{"a":1}', headers: { "content-type": "application/json" } });

describe("a pooled connection the receiver dropped", () => {
  it("the attempt on it is sent again at once on a fresh connection and answers the receiver's 200", async () => {
    // each connection's second request meets a receiver that just closed it
    const r = await receiver((n) => (n === 2 ? "reset" : "answer"));
    const client = createOutboundClient({ allowPrivate: true });
    try {
      expect((await post(client, `${r.url}/one`)).status).toBe(200);
      const t0 = performance.now();
      expect((await post(client, `${r.url}/two`)).status).toBe(200);
      expect(performance.now() - t0).toBeLessThan(2_000); // at once, not after a retry delay
      expect(r.connections).toBe(2);
      expect(r.answered).toEqual(["/one", "/two"]);
      // and the fresh connection serves on
      expect((await post(client, `${r.url}/three`)).status).toBe(200);
    } finally {
      client.close();
    }
  });

  it("a request on a fresh connection that is dropped is not sent again (the receiver may have acted on it)", async () => {
    const r = await receiver(() => "reset");
    const client = createOutboundClient({ allowPrivate: true });
    try {
      const e = await post(client, `${r.url}/once`).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(e).toBeInstanceOf(OutboundError);
      expect((e as OutboundError).kind).toBe("network");
      expect(r.connections).toBe(1);
    } finally {
      client.close();
    }
  });

  it("a second drop on the fresh connection is the attempt's failure (one retry only)", async () => {
    const r = await receiver((n) => (n === 1 && r.connections === 1 ? "answer" : "reset"));
    const client = createOutboundClient({ allowPrivate: true });
    try {
      expect((await post(client, `${r.url}/one`)).status).toBe(200);
      await expect(post(client, `${r.url}/two`)).rejects.toMatchObject({ kind: "network" });
      expect(r.connections).toBe(2);
    } finally {
      client.close();
    }
  });
});

describe("idle pooled connections", () => {
  it("are closed by us before the common 5 s server keep-alive timeout", async () => {
    const r = await receiver(() => "answer");
    const client = createOutboundClient({ allowPrivate: true });
    try {
      expect((await post(client, `${r.url}/one`)).status).toBe(200);
      const end = Date.now() + 8_000;
      while (!r.clientClosedAfterIdleMs.length && Date.now() < end) await new Promise((res) => setTimeout(res, 50));
      expect(r.clientClosedAfterIdleMs).toHaveLength(1);
      expect(r.clientClosedAfterIdleMs[0]).toBeLessThan(5_000);
      expect(r.clientClosedAfterIdleMs[0]).toBeGreaterThan(1_000); // still reused for a burst
    } finally {
      client.close();
    }
  });
});
