import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import type { TLSSocket } from "node:tls";
import { createContextValues, type ConnectRouter, type Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { toConnectError } from "./errors.ts";
import { registerLocalService } from "./rpc.ts";
import type { Logger } from "./logger.ts";
import { callerCheck, LOCAL_CALLER_HEADER, peerNames, type ServiceCallers } from "./callers.ts";
import type { InternalClients } from "./internal-clients.ts";
import { certificateNames, type TlsIdentity } from "./tls.ts";
import { serverObserver } from "./rpc-observe.ts";
import { reflectionRoutes } from "./reflection.ts";
import { healthState, openHealthListener, type HealthListener } from "./health.ts";

export interface ServiceHostOptions {
  name: string;
  host: string;
  port: number;
  logger: Logger;
  routes: (router: ConnectRouter) => void;
  /** The service's certificate and the CA its callers' certificates must come from. */
  identity: TlsIdentity;
  /** Who may call which RPC (see callers.ts); anything not listed is refused. */
  callers: readonly ServiceCallers[];
  /** Internal teams' clients (INTERNAL_CLIENTS_FILE), allowed after the services' table. */
  clients?: InternalClients;
  /** A plain-text listener that serves only grpc.health.v1 (for Kubernetes probes); unset: none. */
  healthPort?: number;
  /** That listener, when it was opened already (before the service waited for its database): adopted instead of healthPort, closed on close(). */
  healthListener?: HealthListener;
  /** Extra readiness check for the health service (e.g. the database answers). */
  ready?: () => Promise<boolean>;
  shutdownTimeoutMs?: number;
}

export interface ServiceHost {
  readonly port: number;
  readonly url: string;
  /** The plain health listener's port, when there is one. */
  readonly healthPort?: number;
  /** Calls refused by the allow-list since start (network and in-process); also icv_rpc_refused_total. */
  readonly deniedCalls: number;
  /** Stops accepting calls, lets in-flight calls finish (up to the timeout), then closes. */
  close(): Promise<void>;
}

/** Maps thrown domain errors to Connect errors and logs unexpected failures once. */
function errorInterceptor(logger: Logger): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (e) {
      const ce = toConnectError(e);
      if (ce.metadata.get("icv-error-code") === "internal_error") {
        logger.error({ err: e, method: req.method.name, request_id: req.header.get("x-request-id") }, "rpc failed");
      }
      throw ce;
    }
  };
}

/**
 * A Connect server on HTTP/2 over mutual TLS (TLS 1.3; a client certificate from the service's
 * CA is required) that also speaks plain gRPC and gRPC-Web, with the standard grpc.health.v1
 * service, a caller allow-list on every RPC, certificate rotation without restart and graceful
 * shutdown. In-process callers reach the same routes through the same allow-list.
 */
export async function startServiceHost(opts: ServiceHostOptions): Promise<ServiceHost> {
  const health = opts.healthListener?.state ?? healthState();
  const routes = (router: ConnectRouter) => {
    health.routes(router);
    opts.routes(router);
    // reflection describes what is registered so far (health and the service's own RPCs)
    reflectionRoutes(router, [...new Set(router.handlers.map((h) => h.service))]);
  };

  // who calls: on the network the verified client certificate (read once per connection), in
  // process the caller's name set by rpcClient's in-memory path (no header is trusted on a socket)
  let denied = 0;
  const check = (identify: Parameters<typeof callerCheck>[0]["identify"]) =>
    callerCheck({ service: opts.name, lists: opts.callers, clients: opts.clients, identify, logger: opts.logger, onDenied: () => void denied++ });
  const errors = errorInterceptor(opts.logger);
  const observe = serverObserver(opts.name);
  const peers = new WeakMap<http2.Http2Session, readonly string[]>();
  const handler = connectNodeAdapter({
    interceptors: [observe, check((req) => req.contextValues.get(peerNames)), errors],
    routes,
    contextValues: (req) => {
      const session = (req as http2.Http2ServerRequest).stream?.session;
      return createContextValues().set(peerNames, (session && peers.get(session)) ?? []);
    },
  });

  const server = http2.createSecureServer({ ...opts.identity.options, requestCert: true, rejectUnauthorized: true, allowHTTP1: false }, handler);
  const sessions = new Set<http2.ServerHttp2Session>();
  // new files: new handshakes use them, and open connections get GOAWAY (their calls in flight
  // finish) so that callers reconnect under the new certificates
  const rotated = () => {
    server.setSecureContext(opts.identity.options);
    for (const s of sessions) s.close();
  };
  const stopWatching = opts.identity.onChange(rotated);
  const track = (s: http2.ServerHttp2Session) => {
    sessions.add(s);
    s.on("close", () => sessions.delete(s));
  };
  server.on("session", (s) => {
    track(s);
    const cert = (s.socket as unknown as TLSSocket).getPeerCertificate?.();
    peers.set(s, cert ? certificateNames(cert) : []);
  });
  const listen = (srv: http2.Http2Server | http2.Http2SecureServer, port: number) =>
    new Promise<number>((resolve, reject) => {
      srv.once("error", reject);
      srv.listen(port, opts.host, () => resolve((srv.address() as AddressInfo).port));
    });
  let port: number;
  let healthListener = opts.healthListener;
  try {
    port = await listen(server, opts.port);
    // probes (kubelet) hold no client certificate: health only, nothing else on this port
    if (!healthListener && opts.healthPort !== undefined)
      healthListener = await openHealthListener({ host: opts.host, port: opts.healthPort, state: health, interceptors: [errors] });
  } catch (e) {
    stopWatching();
    server.close();
    await opts.healthListener?.close();
    throw e;
  }
  const healthPort = healthListener?.port;
  health.started(opts.name, opts.ready);
  const url = `https://${opts.host === "0.0.0.0" ? "127.0.0.1" : opts.host}:${port}`;
  // the in-memory transport is reachable only from this process (rpcClient sets the header there)
  const localCaller = check((req) => {
    const name = req.header.get(LOCAL_CALLER_HEADER);
    return name ? [name] : [];
  });
  const local = registerLocalService(url, routes, [observe, localCaller, errors]);
  opts.logger.info({ rpc_service: opts.name, port, health_port: healthPort }, "service listening (mutual TLS)");

  let closing: Promise<void> | undefined;
  return {
    port,
    url,
    healthPort,
    get deniedCalls() {
      return denied;
    },
    close() {
      closing ??= (async () => {
        health.stopping();
        stopWatching();
        const timeout = opts.shutdownTimeoutMs ?? 10_000;
        const drained = local.drain(timeout);
        const closed = Promise.all([server].map((srv) => new Promise<void>((resolve) => srv.close(() => resolve())))).then(() => healthListener?.close());
        // GOAWAY: peers open no new streams; streams in flight run to completion.
        for (const s of sessions) s.close();
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          closed,
          new Promise<void>((resolve) => {
            timer = setTimeout(() => {
              for (const s of sessions) s.destroy();
              resolve();
            }, timeout);
          }),
        ]);
        clearTimeout(timer);
        await drained;
        opts.logger.info({ rpc_service: opts.name }, "service stopped");
      })();
      return closing;
    },
  };
}
