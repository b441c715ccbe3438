// The SSE fan-out floor (issue 33): a bare node:http process that speaks just enough of ICV's API
// for benchSse (create, the event stream, test-verify) and fans one event out to every open stream
// with one write each, as ICV's hub does. Measured with the same client right beside ICV, it shows
// what 10,000 streams cost on this machine before any of ICV's own work.
//   node --import tsx scripts/bench/sse-floor.ts   → prints "listening PORT"
import { randomBytes } from "node:crypto";
import http from "node:http";
// the hub's own framing of an event as an HTTP/1.1 chunk, so both write the same bytes
import { chunk } from "../../services/gateway/src/sse/format.ts";

const streams = new Map<string, Set<http.ServerResponse>>();

const server = http.createServer((req, res) => {
  const url = req.url ?? "";
  if (req.method === "POST" && url === "/api/v1/verifications") {
    req.resume();
    const id = `ver_${randomBytes(12).toString("hex")}`;
    streams.set(id, new Set());
    res.writeHead(201, { "content-type": "application/json" }).end(JSON.stringify({ id, status: "pending" }));
    return;
  }
  const m = /^\/api\/v1\/verifications\/(ver_[0-9a-f]{24})\/(events|test-verify)$/.exec(url);
  const list = m && streams.get(m[1]);
  if (!m || !list) {
    res.writeHead(404).end();
    return;
  }
  if (m[2] === "events") {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    res.socket?.setNoDelay(true);
    res.write(`retry: 3000\n\nevent: connected\ndata: ${JSON.stringify({ verification_id: m[1], status: "pending" })}\n\n`);
    list.add(res);
    res.once("close", () => list.delete(res));
    return;
  }
  req.resume();
  const data = {
    verification_id: m[1],
    status: "verified",
    previous_status: "pending",
    changed_at: new Date().toISOString(),
    proof: { token: "x".repeat(1200) },
  };
  const { framed } = chunk(`id: evt_1\nevent: status_changed\ndata: ${JSON.stringify(data)}\n\n`);
  res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ id: m[1], status: "verified" }));
  for (const s of list) s.socket?.write(framed);
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  const addr = server.address();
  process.stdout.write(`listening ${typeof addr === "object" && addr ? addr.port : 0}\n`);
});
process.on("SIGTERM", () => process.exit(0));
