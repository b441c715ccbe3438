import { randomUUID } from "node:crypto";
import type http from "node:http";
import { API_INFO } from "./routes/meta.ts";

/**
 * What the gateway answers while it starts (waiting for its database, the event log, the
 * services): live, since `GET /api/v1` answers as always (the chart's startup and liveness
 * probes), and not ready, since `/health` is 503 `unhealthy` (the readiness probe), and every
 * other request is 503 `service_unavailable` with `Retry-After`. Nothing here reads a backing service.
 */
export function startingHandler(): http.RequestListener {
  return (req, res) => {
    const requestId = randomUUID();
    const path = (req.url ?? "/").split("?")[0];
    const send = (status: number, body: unknown) => {
      const text = JSON.stringify(body);
      res.writeHead(status, {
        "Content-Type": "application/json; charset=utf-8",
        "Content-Length": Buffer.byteLength(text),
        "Cache-Control": "no-store",
        "X-Request-Id": requestId,
      });
      res.end(text);
    };
    if (req.method === "GET" && path === "/api/v1") return send(200, API_INFO);
    if (req.method === "GET" && path === "/health") return send(503, { status: "unhealthy", timestamp: new Date().toISOString(), services: {} });
    res.setHeader("Retry-After", "1");
    send(503, { error: { code: "service_unavailable", message: "the service is starting; try again shortly", request_id: requestId } });
  };
}
