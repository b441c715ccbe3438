// The baseline: a bare node:http hello-world, run in its own process so it does not share an
// event loop with autocannon. Prints {"port": N} on its first stdout line once it listens.
import http from "node:http";
import type { AddressInfo } from "node:net";

const body = Buffer.from("hello world");
const server = http.createServer({ keepAliveTimeout: 65_000 }, (_req, res) => {
  res.writeHead(200, { "content-type": "text/plain", "content-length": body.length });
  res.end(body);
});
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
