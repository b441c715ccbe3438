import { Code, ConnectError, createClient, createRouterTransport, type Client, type ConnectRouter, type Interceptor, type Transport } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import type { DescService } from "@bufbuild/protobuf";
import { Health, HealthCheckResponse_ServingStatus as Status } from "@icv/contracts/gen/grpc/health/v1/health_pb.ts";
import { LOCAL_CALLER_HEADER } from "./callers.ts";
import { clientTracer } from "./rpc-observe.ts";
import type { TlsIdentity } from "./tls.ts";

/** Services hosted by this process, by the URL their callers use (see registerLocalService). */
const locals = new Map<string, Transport>();

/**
 * Makes a service hosted in this process reachable in memory: callers configured with its URL
 * skip HTTP/2 and sockets (the all-in-one process; a standalone deployment has no local
 * services). The same routes run, so behaviour and errors are identical; `interceptors` must
 * check the caller named by rpcClient (LOCAL_CALLER_HEADER) against the same allow-list.
 */
export function registerLocalService(url: string, routes: (router: ConnectRouter) => void, interceptors: Interceptor[]): LocalService {
  // the caller's side runs the client tracer: the trace context travels as `traceparent` in memory too
  const inner = createRouterTransport(routes, { router: { interceptors }, transport: { interceptors: [clientTracer] } });
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
  locals.set(url, transport);
  return {
    async drain(timeoutMs) {
      if (locals.get(url) === transport) locals.delete(url);
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

/** The service a client talks to, from its proto package (icv.<name>.v1): the name its certificate must carry. */
function serverNameOf(service: DescService): string {
  const m = /^icv\.([a-z]+)\.v\d+\./.exec(service.typeName);
  if (!m) throw new Error(`the server name of ${service.typeName} must be given`);
  return m[1];
}

/**
 * A client of one service, calling as `identity`: in memory when the service runs in this
 * process (the caller's name travels with the call and the callee's allow-list checks it), else
 * gRPC over HTTP/2 with mutual TLS (TLS 1.3; the client presents its certificate and accepts
 * only a server certificate from the same CA naming `serverName`; connections pooled and kept
 * alive, so a handshake happens once per connection; no compression on the wire). The choice is
 * made per call, so a service that stops or restarts here is found again. Certificates rotated
 * on disk are used by the next connection. Failures arrive as ConnectError carrying the
 * callee's spec code (`fromConnectError` reads it).
 */
export function rpcClient<T extends DescService>(service: T, baseUrl: string, identity: TlsIdentity, timeoutMs = 10_000, serverName = serverNameOf(service)): Client<T> {
  const network = createGrpcTransport({
    baseUrl,
    defaultTimeoutMs: timeoutMs,
    pingIntervalMs: 30_000,
    acceptCompression: [],
    // a client span, its context sent as `traceparent` gRPC metadata (a no-op while tracing is off)
    interceptors: [clientTracer],
    // read at each new connection: a reloaded identity is picked up without a restart
    nodeOptions: {
      servername: serverName,
      get secureContext() {
        return identity.secureContext;
      },
    },
  });
  const withCaller = (header: HeadersInit | undefined) => {
    const h = new Headers(header);
    h.set(LOCAL_CALLER_HEADER, identity.name);
    return h;
  };
  const transport: Transport = {
    unary(method, signal, timeout, header, ...rest) {
      const local = locals.get(baseUrl);
      return local ? local.unary(method, signal, timeout, withCaller(header), ...rest) : network.unary(method, signal, timeout, header, ...rest);
    },
    stream(method, signal, timeout, header, ...rest) {
      const local = locals.get(baseUrl);
      return local ? local.stream(method, signal, timeout, withCaller(header), ...rest) : network.stream(method, signal, timeout, header, ...rest);
    },
  };
  return createClient(service, transport);
}

/** Asks a service's grpc.health.v1 endpoint as `identity`; false on any failure. */
export async function checkHealth(baseUrl: string, identity: TlsIdentity, serverName: string, timeoutMs = 2_000): Promise<boolean> {
  try {
    const key = `${identity.name} ${baseUrl}`;
    const client = healthClients.get(key) ?? rpcClient(Health, baseUrl, identity, timeoutMs, serverName);
    healthClients.set(key, client);
    const r = await client.check({ service: "" }, { timeoutMs });
    return r.status === Status.SERVING;
  } catch {
    return false;
  }
}
const healthClients = new Map<string, Client<typeof Health>>();
