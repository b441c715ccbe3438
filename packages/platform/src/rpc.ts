import { Code, ConnectError, createClient, createRouterTransport, type Client, type ConnectRouter, type Interceptor, type Transport } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import type { DescService } from "@bufbuild/protobuf";
import { Health, HealthCheckResponse_ServingStatus as Status } from "@icv/contracts/gen/grpc/health/v1/health_pb.ts";

/** Services hosted by this process, by the URL their callers use (see registerLocalService). */
const local = new Map<string, Transport>();

/**
 * Makes a service hosted in this process reachable in memory: callers configured with its URL
 * skip HTTP/2 and sockets (the all-in-one process; a standalone deployment has no local
 * services). The same routes and interceptors run, so behaviour and errors are identical.
 */
export function registerLocalService(url: string, routes: (router: ConnectRouter) => void, interceptors: Interceptor[]): LocalService {
  const inner = createRouterTransport(routes, { router: { interceptors } });
  const inflight = new Set<AbortController>();
  let idle: (() => void) | undefined;
  // each call gets its own abort signal (following the caller's), so shutdown can cut it
  const track = async <R>(signal: AbortSignal | undefined, run: (s: AbortSignal) => Promise<R>): Promise<R> => {
    const ac = new AbortController();
    const follow = () => ac.abort(signal?.reason);
    signal?.addEventListener("abort", follow, { once: true });
    inflight.add(ac);
    try {
      return await run(ac.signal);
    } finally {
      inflight.delete(ac);
      signal?.removeEventListener("abort", follow);
      if (!inflight.size) idle?.();
    }
  };
  const transport: Transport = {
    unary: (method, signal, ...rest) => track(signal, (s) => inner.unary(method, s, ...rest)),
    stream: (method, signal, ...rest) => track(signal, (s) => inner.stream(method, s, ...rest)),
  };
  local.set(url, transport);
  return {
    async drain(timeoutMs) {
      if (local.get(url) === transport) local.delete(url);
      if (inflight.size) {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([new Promise<void>((r) => (idle = r)), new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)))]);
        clearTimeout(timer);
      }
      for (const ac of inflight) ac.abort(new ConnectError("the service is shutting down", Code.Unavailable));
    },
  };
}

export interface LocalService {
  /** Takes no new in-memory calls, lets those in flight finish for up to timeoutMs, then cuts the rest. */
  drain(timeoutMs: number): Promise<void>;
}

/**
 * A client of one service: in memory when the service runs in this process, else gRPC over
 * HTTP/2 (connections pooled and kept alive, no compression on the wire). The choice is made per
 * call, so a service that stops or restarts here is found again. Failures arrive as ConnectError
 * carrying the callee's spec code (`fromConnectError` reads it).
 */
export function rpcClient<T extends DescService>(service: T, baseUrl: string, timeoutMs = 10_000): Client<T> {
  const network = createGrpcTransport({
    baseUrl,
    defaultTimeoutMs: timeoutMs,
    pingIntervalMs: 30_000,
    acceptCompression: [],
  });
  const transport: Transport = {
    unary: (...args) => (local.get(baseUrl) ?? network).unary(...args),
    stream: (...args) => (local.get(baseUrl) ?? network).stream(...args),
  };
  return createClient(service, transport);
}

/** Asks a service's grpc.health.v1 endpoint; false on any failure. */
export async function checkHealth(baseUrl: string, timeoutMs = 2_000): Promise<boolean> {
  try {
    const client = healthClients.get(baseUrl) ?? rpcClient(Health, baseUrl, timeoutMs);
    healthClients.set(baseUrl, client);
    const r = await client.check({ service: "" }, { timeoutMs });
    return r.status === Status.SERVING;
  } catch {
    return false;
  }
}
const healthClients = new Map<string, Client<typeof Health>>();
