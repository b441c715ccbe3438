import { Code, ConnectError, createContextKey, type Interceptor } from "@connectrpc/connect";
import type { DescService } from "@bufbuild/protobuf";
import type { Logger } from "./logger.ts";
import { Environment, TenantScopeSchema, type TenantScope } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import type { InternalClients } from "./internal-clients.ts";
import { rpcCallerRequests, rpcRefused, serviceLabel } from "./metrics.ts";
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

/** Services any authenticated caller may call (health, and reflection for grpcurl and the like). */
const OPEN_TO_ALL = new Set(["grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"]);

/** A refusal is logged once per caller and RPC per this many ms (each is counted). */
const DENIED_LOG_MS = 60_000;

type Req = Parameters<Parameters<Interceptor>[0]>[0];

export interface CallerCheckOptions {
  /** The hosting service (its full RPC name), for the log and the refused-calls counter. */
  service: string;
  lists: readonly ServiceCallers[];
  /** Who is calling: from the TLS peer (network) or the in-process header (local). */
  identify: (req: Req) => readonly string[];
  logger: Logger;
  /** Counts each refused call. */
  onDenied: () => void;
  /** The internal teams' clients (INTERNAL_CLIENTS_FILE), consulted after the services' table. */
  clients?: InternalClients;
  now?: () => number;
}

const codeName = (e: unknown): string => Code[ConnectError.from(e).code]?.replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase() ?? "unknown";

/** The tenant a request names: its scope's tenant, or a tenant_id field; "" when none. */
function tenantOf(req: Req): { tenant: string; environment?: string; hasScopeField: boolean } {
  const fields = req.method.input.fields;
  const hasScope = fields.some((f) => f.localName === "scope" && f.message?.typeName === TenantScopeSchema.typeName);
  const hasTenant = fields.some((f) => f.localName === "tenantId" && f.fieldKind === "scalar");
  if (req.stream) return { tenant: "", hasScopeField: hasScope || hasTenant };
  const msg = req.message as { scope?: TenantScope; tenantId?: string };
  if (hasScope) {
    const env = msg.scope?.environment;
    const environment = env === Environment.LIVE ? "live" : env === Environment.TEST ? "test" : undefined;
    return { tenant: environment ? (msg.scope?.tenantId ?? "") : "", environment, hasScopeField: true };
  }
  return { tenant: hasTenant ? (msg.tenantId ?? "") : "", hasScopeField: hasTenant };
}

/**
 * Refuses a call whose caller is not on the RPC's allow-list: PERMISSION_DENIED, logged with the
 * caller's name, the service and the method (once per caller and RPC per minute), and counted
 * (icv_rpc_refused_total). Unknown services and RPCs are refused. A caller not in the services'
 * table may be an internal team's client of INTERNAL_CLIENTS_FILE: its calls must name a tenant
 * (INVALID_ARGUMENT otherwise), are rate limited per client (RESOURCE_EXHAUSTED), and each is
 * logged (client, RPC, tenant, outcome, ms; never the payload). Every call is counted by caller
 * (icv_rpc_requests_total).
 */
export function callerCheck(opts: CallerCheckOptions): Interceptor {
  const table = new Map(opts.lists.map((l) => [l.typeName, l.methods]));
  const now = opts.now ?? Date.now;
  const loggedAt = new Map<string, { at: number; suppressed: number }>();
  const service = serviceLabel(opts.service);
  const count = (caller: string, method: string, code: string) => rpcCallerRequests.inc({ caller, service, method, code });
  return (next) => async (req) => {
    const names = opts.identify(req);
    if (!names.length) throw new ConnectError("caller identity required", Code.Unauthenticated);
    const rpc = `${req.service.typeName}/${req.method.name}`;
    const method = `${req.service.name}/${req.method.name}`;
    const open = OPEN_TO_ALL.has(req.service.typeName);
    const listed = open || (table.get(req.service.typeName)?.[req.method.localName] ?? []).some((n) => names.includes(n));
    const client = listed ? undefined : opts.clients?.allowed(names, req.service.typeName, req.method.name);
    if (!listed && !client) {
      opts.onDenied();
      rpcRefused.inc({ caller: names[0], service, method });
      count(names[0], method, "permission_denied");
      const key = `${names.join(",")}|${rpc}`;
      const seen = loggedAt.get(key);
      if (!seen || now() - seen.at >= DENIED_LOG_MS) {
        if (loggedAt.size > 10_000) loggedAt.clear();
        loggedAt.set(key, { at: now(), suppressed: 0 });
        opts.logger.warn(
          { caller: names.join(","), rpc_service: opts.service, method: rpc, ...(seen?.suppressed ? { refused_since_last_line: seen.suppressed } : {}) },
          "rpc refused: caller not on the allow-list",
        );
      } else seen.suppressed++;
      throw new ConnectError(`${names.join(",")} may not call ${req.method.name}`, Code.PermissionDenied);
    }
    if (!client) {
      try {
        const res = await next(req);
        count(names[0], method, "ok");
        return res;
      } catch (e) {
        count(names[0], method, codeName(e));
        throw e;
      }
    }
    // an internal team's client
    const start = performance.now();
    const { tenant, environment, hasScopeField } = tenantOf(req);
    let outcome = "ok";
    try {
      if (hasScopeField && !tenant)
        throw new ConnectError("tenant scope required: set scope.tenant_id and scope.environment (or tenant_id)", Code.InvalidArgument);
      const rate = await opts.clients!.consume(client);
      if (!rate.allowed) throw new ConnectError(`rate limit of ${rate.limit} calls per minute reached; retry in ${rate.retryAfter} s`, Code.ResourceExhausted);
      return await next(req);
    } catch (e) {
      outcome = codeName(e);
      throw e;
    } finally {
      count(client, method, outcome);
      opts.logger.info(
        { caller: client, rpc, tenant: tenant || undefined, environment, outcome, ms: Math.round(performance.now() - start) },
        "internal client call",
      );
    }
  };
}
