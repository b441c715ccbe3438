import { Code, ConnectError, createContextKey, type Interceptor } from "@connectrpc/connect";
import type { DescService } from "@bufbuild/protobuf";
import type { Logger } from "./logger.ts";
import { rpcRefused, serviceLabel } from "./metrics.ts";
import type { InternalName } from "./tls.ts";

/** Every RPC of a service, each with the services allowed to call it (an empty list: nobody). */
export type CallerTable<S extends DescService> = { readonly [K in keyof S["method"]]: readonly InternalName[] };

/** One service's allow-list, by the service's full name and its methods' local names. */
export interface ServiceCallers {
  readonly typeName: string;
  readonly methods: Readonly<Record<string, readonly InternalName[]>>;
}

/** The allow-list of `service`; the type makes the table name every RPC of it. */
export function allow<S extends DescService>(service: S, table: CallerTable<S>): ServiceCallers {
  return { typeName: service.typeName, methods: table as Readonly<Record<string, readonly InternalName[]>> };
}

/** Every caller named anywhere in the allow-lists (what a NetworkPolicy admits). */
export function callersOf(lists: readonly ServiceCallers[]): InternalName[] {
  return [...new Set(lists.flatMap((l) => Object.values(l.methods).flat()))].sort();
}

/**
 * The names of the caller as the connection proved them: the verified client certificate's
 * DNS names. Set only by the network server from the TLS session, never from a header.
 */
export const peerNames = createContextKey<readonly string[]>([], { description: "verified peer certificate names" });

/** In-process calls (no socket, no certificate) carry the calling service's name in this header. */
export const LOCAL_CALLER_HEADER = "icv-local-caller";

/** Services any authenticated caller may call (the health service). */
const OPEN_TO_ALL = new Set(["grpc.health.v1.Health"]);

export interface CallerCheckOptions {
  /** The hosting service (its full RPC name), for the log and the refused-calls counter. */
  service: string;
  lists: readonly ServiceCallers[];
  /** Who is calling: from the TLS peer (network) or the in-process header (local). */
  identify: (req: Parameters<Parameters<Interceptor>[0]>[0]) => readonly string[];
  logger: Logger;
  /** Counts each refused call. */
  onDenied: () => void;
}

/**
 * Refuses a call whose caller is not on the RPC's allow-list: PERMISSION_DENIED, logged with the
 * caller's name, the service and the method, and counted (icv_rpc_refused_total). Unknown services and RPCs are refused.
 */
export function callerCheck(opts: CallerCheckOptions): Interceptor {
  const table = new Map(opts.lists.map((l) => [l.typeName, l.methods]));
  return (next) => async (req) => {
    const names = opts.identify(req);
    if (!names.length) throw new ConnectError("caller identity required", Code.Unauthenticated);
    const allowed = OPEN_TO_ALL.has(req.service.typeName) || (table.get(req.service.typeName)?.[req.method.localName] ?? []).some((n) => names.includes(n));
    if (!allowed) {
      opts.onDenied();
      rpcRefused.inc({ caller: names[0], service: serviceLabel(opts.service), method: `${req.service.name}/${req.method.name}` });
      opts.logger.warn(
        { caller: names.join(","), rpc_service: opts.service, method: `${req.service.typeName}/${req.method.name}` },
        "rpc refused: caller not on the allow-list",
      );
      throw new ConnectError(`${names.join(",")} may not call ${req.method.name}`, Code.PermissionDenied);
    }
    return next(req);
  };
}
