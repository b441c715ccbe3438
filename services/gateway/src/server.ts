import http from "node:http";
import type { Socket } from "node:net";
import { AppError, type Config } from "@icv/platform";
import { errorReply, requestIdOf } from "./http.ts";
import { HOOK_BODY_BYTES } from "./hooks/routes.ts";
import { answerClientError, LIMITS } from "./input.ts";

/**
 * The gateway's public HTTP server, held against clients that hold connections (issue 28):
 * - a request whose headers and body have not all arrived within HTTP_REQUEST_TIMEOUT_MS (its
 *   headers within HTTP_HEADERS_TIMEOUT_MS) is answered 408 and closed (Node's own timers,
 *   checked every second instead of every 30 s; answerClientError gives them the error shape);
 * - a declared Content-Length over the body limit is answered 413 at once, unread, and the
 *   connection closed: reading a body we would refuse only holds the connection;
 * - an idle kept-alive connection is closed after HTTP_KEEP_ALIVE_TIMEOUT_MS;
 * - one peer address holds at most HTTP_MAX_CONNECTIONS_PER_IP connections: the next is answered
 *   429 too_many_connections and closed (0: no cap; behind a proxy the peer is the proxy).
 */
export function gatewayServer(config: Config, listener: http.RequestListener): http.Server {
  const refused = new WeakSet<Socket>();
  const server = http.createServer(
    {
      requestTimeout: config.HTTP_REQUEST_TIMEOUT_MS,
      headersTimeout: Math.min(config.HTTP_HEADERS_TIMEOUT_MS, config.HTTP_REQUEST_TIMEOUT_MS),
      keepAliveTimeout: config.HTTP_KEEP_ALIVE_TIMEOUT_MS,
      connectionsCheckingInterval: 1_000,
    },
    (req, res) => {
      if (refused.has(req.socket)) return void req.socket.destroy();
      if (!declaredTooLarge(req, res)) listener(req, res);
    },
  );
  server.on("clientError", answerClientError);
  if (config.HTTP_MAX_CONNECTIONS_PER_IP > 0) capPerPeer(server, config.HTTP_MAX_CONNECTIONS_PER_IP, refused);
  return server;
}

/** The body limit of a path: provider hooks take larger payloads than the API. */
const bodyLimit = (url: string | undefined) => (url?.startsWith("/hooks/") ? HOOK_BODY_BYTES : LIMITS.bodyBytes);

/** Answers 413 (and closes) when the declared length is over the limit; true when it did. */
function declaredTooLarge(req: http.IncomingMessage, res: http.ServerResponse): boolean {
  const declared = req.headers["content-length"];
  if (declared === undefined) return false;
  const limit = bodyLimit(req.url);
  if (!(Number(declared) > limit)) return false;
  const r = errorReply(new AppError("payload_too_large", `request body is larger than ${Math.round(limit / 1024)} KB`), requestIdOf(req));
  const text = JSON.stringify(r.body);
  res.writeHead(r.status, {
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": String(Buffer.byteLength(text)),
    "X-Request-Id": (r.body as { error: { request_id: string } }).error.request_id,
    Connection: "close",
  });
  res.end(text);
  return true;
}

function capPerPeer(server: http.Server, max: number, refused: WeakSet<Socket>): void {
  const open = new Map<string, number>();
  server.on("connection", (socket: Socket) => {
    const peer = socket.remoteAddress ?? "";
    const n = (open.get(peer) ?? 0) + 1;
    if (n > max) {
      refused.add(socket);
      const r = errorReply(
        new AppError("too_many_connections", `at most ${max} connections per client address`),
        requestIdOf({ headers: {} } as http.IncomingMessage),
      );
      const body = JSON.stringify(r.body);
      socket.end(
        `HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
          `Connection: close\r\n\r\n${body}`,
      );
      socket.setTimeout(1_000, () => socket.destroy());
      return;
    }
    open.set(peer, n);
    socket.once("close", () => {
      const left = (open.get(peer) ?? 1) - 1;
      if (left > 0) open.set(peer, left);
      else open.delete(peer);
    });
  });
}
