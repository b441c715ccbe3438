// A real webhook receiver on loopback: records every request (raw body and headers) and answers
// as the test says: a status, a status with headers, or "hold" (keep the request open until
// release() or until the sender gives up).
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The raw body, exactly as received. */
  body: string;
  /** Date.now() when the body had arrived. */
  at: number;
  /** True once the sender closed the connection before an answer (a held request cut off). */
  aborted: boolean;
}

export type Answer = number | { status: number; headers?: Record<string, string>; body?: string } | "hold";

export interface Receiver {
  /** http://127.0.0.1:<port>/hook */
  url: string;
  requests: ReceivedRequest[];
  /** Sets how the next requests are answered (a fixed answer, or one per request). */
  answer(a: Answering): void;
  /** Waits until at least n requests arrived; throws after timeoutMs. */
  waitFor(n: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  /** Answers every held request with this status. */
  release(status?: number): void;
  close(): Promise<void>;
}

export type Answering = Answer | ((req: ReceivedRequest, n: number) => Answer);

export async function startReceiver(initial: Answering = 200): Promise<Receiver> {
  let answer: (req: ReceivedRequest, n: number) => Answer = typeof initial === "function" ? initial : () => initial;
  const requests: ReceivedRequest[] = [];
  const held = new Set<http.ServerResponse>();
  const waiters: (() => void)[] = [];

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const r: ReceivedRequest = {
        method: req.method ?? "",
        path: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
        at: Date.now(),
        aborted: false,
      };
      requests.push(r);
      for (const w of waiters.splice(0)) w();
      const a = answer(r, requests.length);
      if (a === "hold") {
        held.add(res);
        res.on("close", () => {
          if (!res.writableEnded) r.aborted = true;
          held.delete(res);
        });
        return;
      }
      const { status, headers, body } = typeof a === "number" ? { status: a, headers: undefined, body: undefined } : a;
      res.writeHead(status, { "content-type": "text/plain", ...headers }).end(body ?? (status < 300 ? "ok" : "no"));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}/hook`,
    requests,
    answer(a) {
      answer = typeof a === "function" ? a : () => a;
    },
    async waitFor(n, timeoutMs = 10_000) {
      const until = Date.now() + timeoutMs;
      while (requests.length < n) {
        const left = until - Date.now();
        if (left <= 0) throw new Error(`receiver: expected ${n} requests within ${timeoutMs} ms, got ${requests.length}`);
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, left);
          waiters.push(() => (clearTimeout(t), resolve()));
        });
      }
      return requests;
    },
    release(status = 200) {
      for (const res of held) res.writeHead(status).end("released");
      held.clear();
    },
    close() {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}
