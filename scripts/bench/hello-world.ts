// The baselines: a bare node:http hello-world, or (argument `express`) a bare Express hello-world
// (the framework the gateway uses), each run in its own process so it does not share an event
// loop with autocannon. Prints `listening PORT` once it listens.
import http from "node:http";
import type { AddressInfo } from "node:net";
import express from "express";

const body = Buffer.from("hello world");
const plain: http.RequestListener = (_req, res) => {
  res.writeHead(200, { "content-type": "text/plain", "content-length": body.length });
  res.end(body);
};
const app = express();
app.get("/", (_req, res) => {
  res.type("text/plain").send("hello world");
});
const server = http.createServer({ keepAliveTimeout: 65_000 }, process.argv[2] === "express" ? app : plain);
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
