import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { EventEmitter, on } from "node:events";
import { Code, ConnectError, type ConnectRouter, type Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { Health, HealthCheckResponse_ServingStatus as Status } from "@icv/contracts/gen/grpc/health/v1/health_pb.ts";
import { toConnectError } from "./errors.ts";
import { registerLocalService } from "./rpc.ts";
import type { Logger } from "./logger.ts";

export interface ServiceHostOptions {
  name: string;
  host: string;
  port: number;
  logger: Logger;
  routes: (router: ConnectRouter) => void;
  /** Extra readiness check for the health service (e.g. the database answers). */
  ready?: () => Promise<boolean>;
  shutdownTimeoutMs?: number;
}

export interface ServiceHost {
  readonly port: number;
  readonly url: string;
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
 * A Connect server on cleartext HTTP/2 that also speaks plain gRPC and gRPC-Web, with the
 * standard grpc.health.v1 service and graceful shutdown.
 */
export async function startServiceHost(opts: ServiceHostOptions): Promise<ServiceHost> {
  let serving = true;
  const changes = new EventEmitter();
  const statusNow = async (): Promise<Status> => {
    if (!serving) return Status.NOT_SERVING;
    if (!opts.ready) return Status.SERVING;
    return (await opts.ready().catch(() => false)) ? Status.SERVING : Status.NOT_SERVING;
  };
  const known = (service: string) => service === "" || service === opts.name;

  const interceptors = [errorInterceptor(opts.logger)];
  const routes = (router: ConnectRouter) => {
    router.service(Health, {
      async check(req) {
        if (!known(req.service)) throw new ConnectError(`unknown service ${req.service}`, Code.NotFound);
        return { status: await statusNow() };
      },
      async *watch(req, ctx) {
        const current = async () => (known(req.service) ? await statusNow() : Status.SERVICE_UNKNOWN);
        yield { status: await current() };
        for await (const _ of on(changes, "change", { signal: ctx.signal })) yield { status: await current() };
      },
    });
    opts.routes(router);
  };
  const handler = connectNodeAdapter({ interceptors, routes });

  const server = http2.createServer(handler);
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (s) => {
    sessions.add(s);
    s.on("close", () => sessions.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://${opts.host === "0.0.0.0" ? "127.0.0.1" : opts.host}:${port}`;
  const local = registerLocalService(url, routes, interceptors);
  opts.logger.info({ rpc_service: opts.name, port }, "service listening");

  let closing: Promise<void> | undefined;
  return {
    port,
    url,
    close() {
      closing ??= (async () => {
        serving = false;
        changes.emit("change");
        const timeout = opts.shutdownTimeoutMs ?? 10_000;
        const drained = local.drain(timeout);
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
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
