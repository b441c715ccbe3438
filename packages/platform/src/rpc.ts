import {
  Code,
  ConnectError,
  createClient,
  createContextValues,
  createRouterTransport,
  type Client,
  type ConnectRouter,
  type HandlerContext,
  type Interceptor,
  type Transport,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { create, isMessage, type DescMethod, type DescService } from "@bufbuild/protobuf";
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
  const direct = directUnary(url, routes, [clientTracer, ...interceptors]);
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
      if (!inflight.size && !directCalls) idle?.();
    }
  };
  // unary calls (nearly all) go straight to the handler; a count of them for the drain
  let directCalls = 0;
  const transport: Transport = {
    unary: (method, signal, timeoutMs, header, input, contextValues) => {
      const call = direct.get(method);
      if (!call) return track(signal, (s) => inner.unary(method, s, timeoutMs, header, input, contextValues));
      directCalls++;
      return call(signal, timeoutMs, header, input, contextValues).finally(() => {
        if (--directCalls === 0 && !inflight.size) idle?.();
      }) as never;
    },
    stream: (method, signal, ...rest) => track(signal, (s) => inner.stream(method, s, ...rest)),
  };
  locals.set(url, transport);
  return {
    async drain(timeoutMs) {
      if (locals.get(url) === transport) locals.delete(url);
      if (inflight.size || directCalls) {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([new Promise<void>((r) => (idle = r)), new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)))]);
        clearTimeout(timer);
      }
      const cut = new ConnectError("the service is shutting down", Code.Unavailable);
      direct.shutdown.abort(cut);
      for (const ac of inflight) ac.abort(cut);
    },
  };
}

type DirectCall = (
  signal: AbortSignal | undefined,
  timeoutMs: number | undefined,
  header: HeadersInit | undefined,
  input: unknown,
  contextValues: UnaryRequest["contextValues"] | undefined,
) => Promise<UnaryResponse>;

/**
 * The unary RPCs of `routes` as direct calls: the typed request message goes to the handler as it
 * is (no encoding, no HTTP framing, no per-call abort controller), through the same interceptors
 * in the same order as the network server (metrics, the caller allow-list, error mapping). Only
 * what can cut a call costs anything: a deadline (timeoutMs: DEADLINE_EXCEEDED when it passes),
 * the caller's signal, and the service's shutdown (UNAVAILABLE).
 */
function directUnary(
  url: string,
  routes: (router: ConnectRouter) => void,
  interceptors: Interceptor[],
): Map<DescMethod, DirectCall> & { shutdown: AbortController } {
  const shutdown = new AbortController();
  const calls = Object.assign(new Map<DescMethod, DirectCall>(), { shutdown });
  // the calls in flight without a signal or deadline of their own, cut by one listener (an
  // EventTarget listener added and removed per call cost more than the rest of raceShutdown)
  const inFlight = new Set<() => void>();
  shutdown.signal.addEventListener("abort", () => {
    for (const cut of inFlight) cut();
  });
  const collect = (service: DescService, impl: Record<string, unknown>) => {
    for (const method of service.methods) {
      const fn = impl[method.localName] as ((req: unknown, ctx: HandlerContext) => unknown) | undefined;
      if (method.methodKind !== "unary" || typeof fn !== "function") continue;
      calls.set(method, makeCall(service, method as DescMethod & { methodKind: "unary" }, fn.bind(impl)));
    }
  };
  const makeCall = (service: DescService, method: DescMethod & { methodKind: "unary" }, fn: (req: unknown, ctx: HandlerContext) => unknown): DirectCall => {
    const handle = async (req: UnaryRequest): Promise<UnaryResponse> => {
      const responseHeader = new Headers();
      const responseTrailer = new Headers();
      const ctx: HandlerContext = {
        service,
        method,
        protocolName: "in-process",
        requestMethod: "POST",
        url: req.url,
        signal: req.signal,
        timeoutMs: () => undefined,
        requestHeader: req.header,
        responseHeader,
        responseTrailer,
        values: req.contextValues,
      };
      const out = await fn(req.message, ctx);
      const message = isMessage(out, method.output) ? out : create(method.output, out as never);
      return { stream: false, service, method, header: responseHeader, trailer: responseTrailer, message } as UnaryResponse;
    };
    const chain = interceptors
      .concat()
      .reverse()
      .reduce((next, i) => i(next as never) as typeof handle, handle);
    const path = `${url}/${service.typeName}/${method.name}`;
    return async (signal, timeoutMs, header, input, contextValues) => {
      const message = isMessage(input as never, method.input) ? input : create(method.input, input as never);
      const req = {
        stream: false,
        service,
        method,
        requestMethod: "POST",
        url: path,
        signal: signal ? AbortSignal.any([signal, shutdown.signal]) : shutdown.signal,
        header: header instanceof Headers ? header : new Headers(header),
        contextValues: contextValues ?? createContextValues(),
        message,
      } as unknown as UnaryRequest;
      const run = chain(req);
      if (!timeoutMs && !signal && !shutdown.signal.aborted) return raceShutdown(run, shutdown.signal, inFlight);
      return raceCut(run, req.signal, timeoutMs);
    };
  };
  routes({
    handlers: [],
    service(service: DescService, impl: Record<string, unknown>) {
      collect(service, impl);
      return this;
    },
    rpc() {
      return this;
    },
  } as unknown as ConnectRouter);
  return calls;
}

/** The call's answer, or UNAVAILABLE if the service shuts down first. */
function raceShutdown<T>(run: Promise<T>, shutdown: AbortSignal, inFlight: Set<() => void>): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const cut = () => reject(ConnectError.from(shutdown.reason, Code.Unavailable));
    inFlight.add(cut);
    run.then(
      (v) => {
        inFlight.delete(cut);
        resolve(v);
      },
      (e: unknown) => {
        inFlight.delete(cut);
        reject(e);
      },
    );
  });
}

/** The call's answer, or the error of whatever cuts it first: its signal, or its deadline passing. */
function raceCut<T>(run: Promise<T>, signal: AbortSignal, timeoutMs: number | undefined): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    if (signal.aborted) return reject(ConnectError.from(signal.reason, Code.Canceled));
    const cut = () => reject(ConnectError.from(signal.reason, Code.Canceled));
    signal.addEventListener("abort", cut, { once: true });
    const timer = timeoutMs ? setTimeout(() => reject(new ConnectError("the operation timed out", Code.DeadlineExceeded)), timeoutMs) : undefined;
    run.then(resolve, reject).finally(() => {
      clearTimeout(timer);
      signal.removeEventListener("abort", cut);
    });
  });
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
 * the Connect protocol (binary protobuf) over HTTP/2 with mutual TLS (TLS 1.3; the client presents its certificate and accepts
 * only a server certificate from the same CA naming `serverName`; connections pooled and kept
 * alive, so a handshake happens once per connection; no compression on the wire). The choice is
 * made per call, so a service that stops or restarts here is found again. Certificates rotated
 * on disk are used by the next connection. Failures arrive as ConnectError carrying the
 * callee's spec code (`fromConnectError` reads it).
 */
export function rpcClient<T extends DescService>(
  service: T,
  baseUrl: string,
  identity: TlsIdentity,
  timeoutMs = 10_000,
  serverName = serverNameOf(service),
): Client<T> {
  // the Connect protocol with binary protobuf on HTTP/2: a unary call without gRPC's trailers
  // costs about 40 % less CPU on each side (scripts/bench/rpc-transport.ts, docs/performance.md);
  // the callee's server speaks gRPC and Connect alike (probes and grpcurl keep using gRPC)
  const network = createConnectTransport({
    baseUrl,
    httpVersion: "2",
    useBinaryFormat: true,
    defaultTimeoutMs: timeoutMs,
    pingIntervalMs: 30_000,
    acceptCompression: [],
    // a client span, its context sent as the `traceparent` header (a no-op while tracing is off)
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

/** Asks a service's grpc.health.v1 endpoint as `identity`; false on any failure (given to `onError`). */
export async function checkHealth(
  baseUrl: string,
  identity: TlsIdentity,
  serverName: string,
  timeoutMs = 2_000,
  onError?: (e: unknown) => void,
): Promise<boolean> {
  try {
    const key = `${identity.name} ${baseUrl}`;
    const client = healthClients.get(key) ?? rpcClient(Health, baseUrl, identity, timeoutMs, serverName);
    healthClients.set(key, client);
    const r = await client.check({ service: "" }, { timeoutMs });
    return r.status === Status.SERVING;
  } catch (e) {
    onError?.(e);
    return false;
  }
}
const healthClients = new Map<string, Client<typeof Health>>();
