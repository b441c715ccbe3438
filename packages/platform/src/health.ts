import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { EventEmitter, on } from "node:events";
import { Code, ConnectError, type ConnectRouter, type Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { Health, HealthCheckResponse_ServingStatus as Status } from "@icv/contracts/gen/grpc/health/v1/health_pb.ts";

/**
 * The grpc.health.v1 service of one RPC service. Three names answer:
 * - `""` and the service's own name: **readiness** (SERVING once the service is started and its
 *   `ready` check passes; NOT_SERVING while it starts, waits for a dependency, or drains);
 * - `liveness`: SERVING while the process answers at all, even while it waits for Postgres at
 *   start (a probe that restarts a waiting process only delays it) or drains.
 */
export const LIVENESS = "liveness";

export interface HealthState {
  /** Started as `name` (its fully qualified RPC service name): readiness from now on is `ready` (e.g. the database answers), checked at each probe. */
  started(name: string, ready?: () => Promise<boolean>): void;
  /** Draining: readiness NOT_SERVING from now on. */
  stopping(): void;
  routes(router: ConnectRouter): void;
}

export function healthState(): HealthState {
  let name: string | undefined;
  let phase: "starting" | "serving" | "stopping" = "starting";
  let ready: (() => Promise<boolean>) | undefined;
  const changes = new EventEmitter();
  const readiness = async (): Promise<Status> => {
    if (phase !== "serving") return Status.NOT_SERVING;
    if (!ready) return Status.SERVING;
    return (await ready().catch(() => false)) ? Status.SERVING : Status.NOT_SERVING;
  };
  const statusOf = async (service: string): Promise<Status | undefined> => {
    if (service === LIVENESS) return Status.SERVING;
    if (service === "" || service === name) return readiness();
    // before it is started, the service's name is not known yet: not ready whatever is asked
    return phase === "starting" ? Status.NOT_SERVING : undefined;
  };
  return {
    started(n, r) {
      name = n;
      ready = r;
      phase = "serving";
      changes.emit("change");
    },
    stopping() {
      phase = "stopping";
      changes.emit("change");
    },
    routes: (router) =>
      router.service(Health, {
        async check(req) {
          const status = await statusOf(req.service);
          if (status === undefined) throw new ConnectError(`unknown service ${req.service}`, Code.NotFound);
          return { status };
        },
        async *watch(req, ctx) {
          const current = async () => (await statusOf(req.service)) ?? Status.SERVICE_UNKNOWN;
          yield { status: await current() };
          for await (const _ of on(changes, "change", { signal: ctx.signal })) yield { status: await current() };
        },
      }),
  };
}

/** A plain-text HTTP/2 listener serving only the health service (for Kubernetes probes: the kubelet holds no client certificate). */
export interface HealthListener {
  readonly port: number;
  readonly state: HealthState;
  close(): Promise<void>;
}

export async function openHealthListener(opts: { host: string; port: number; state?: HealthState; interceptors?: Interceptor[] }): Promise<HealthListener> {
  const state = opts.state ?? healthState();
  const server = http2.createServer(connectNodeAdapter({ interceptors: opts.interceptors ?? [], routes: state.routes }));
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (s) => {
    sessions.add(s);
    s.on("close", () => sessions.delete(s));
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host, () => resolve((server.address() as AddressInfo).port));
  });
  let closing: Promise<void> | undefined;
  return {
    port,
    state,
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        // probes are unary; a Watch stream left open would hold the close forever
        for (const s of sessions) s.destroy();
      })),
  };
}

/**
 * Health listeners opened while a service starts (before it waits for Postgres), by service
 * name, until its host adopts them: the probes get answers from the first moment.
 */
const early = new Map<string, HealthListener>();

/** Opens the service's health port now (once), answering liveness SERVING and readiness NOT_SERVING until its host starts. */
export async function openEarlyHealth(service: string, host: string, port: number | undefined): Promise<void> {
  if (port === undefined || early.has(service)) return;
  early.set(service, await openHealthListener({ host, port }));
}

/** Closes a listener opened early whose service failed to start. */
export async function closeEarlyHealth(service: string): Promise<void> {
  await adoptEarlyHealth(service)?.close();
}

/** The listener opened early for this service, handed over once (undefined when none was). */
export function adoptEarlyHealth(service: string): HealthListener | undefined {
  const h = early.get(service);
  early.delete(service);
  return h;
}
