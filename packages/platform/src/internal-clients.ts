// Internal teams as gRPC callers (docs/internal-clients.md): INTERNAL_CLIENTS_FILE names each
// client (the DNS name in its certificate) with the RPCs it may call. The file is read at start (a
// bad one refuses the start, naming the line) and again on SIGHUP (a bad one is logged and the
// table in use stays). The services' caller check (callers.ts) consults it after their own tables.
import { readFileSync } from "node:fs";
import path from "node:path";
import type { DescService } from "@bufbuild/protobuf";
import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Node, type YAMLMap } from "yaml";
import { DomainService } from "@icv/contracts/gen/icv/domain/v1/domain_service_pb.ts";
import { ProofService } from "@icv/contracts/gen/icv/proof/v1/proof_service_pb.ts";
import { SessionService } from "@icv/contracts/gen/icv/session/v1/session_service_pb.ts";
import { ProfileService } from "@icv/contracts/gen/icv/verification/v1/profile_service_pb.ts";
import { ProjectService } from "@icv/contracts/gen/icv/verification/v1/project_service_pb.ts";
import { VerificationRequestService } from "@icv/contracts/gen/icv/verification/v1/verification_request_service_pb.ts";
import { VerificationService } from "@icv/contracts/gen/icv/verification/v1/verification_service_pb.ts";
import { WebhookService } from "@icv/contracts/gen/icv/webhook/v1/webhook_service_pb.ts";
import { ConfigError, type Config } from "./config.ts";
import type { Logger } from "./logger.ts";
import { createRateLimiter, type RateDecision, type RateLimiter } from "./rate-limit.ts";
import { INTERNAL_NAMES } from "./tls.ts";

/** Every service a client may be granted RPCs of (health and reflection are open to any certificate of the CA). */
export const GRANTABLE_SERVICES: readonly DescService[] = [
  VerificationService,
  VerificationRequestService,
  ProjectService,
  ProfileService,
  ProofService,
  SessionService,
  DomainService,
  WebhookService,
];

/** A client name: one DNS label-ish name, as it stands in the certificate (CN and SAN DNS). */
export const CLIENT_NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

export interface InternalClient {
  name: string;
  /** `package.Service/Method` or `package.Service/*`. */
  allow: string[];
  /** Calls per minute per process; unset: INTERNAL_CLIENT_RATE_PER_MINUTE. */
  ratePerMinute?: number;
}

/** A file that is not a valid client list: where (1-based line) and why. */
export class InternalClientsError extends Error {
  constructor(
    readonly file: string,
    readonly line: number,
    readonly reason: string,
  ) {
    super(`${file}:${line}: ${reason}`);
  }
}

/** A service name (or a client's name) is refused when it is also a service's identity: that would let a team pose as one. */
export function clientNameProblem(name: string): string | undefined {
  if (!CLIENT_NAME.test(name)) return `name "${name.slice(0, 80)}" must be 1 to 63 of a-z, 0-9 and - (a DNS label, as in its certificate)`;
  if ((INTERNAL_NAMES as readonly string[]).includes(name)) return `name "${name}" is a service's name; a client must have its own`;
  return undefined;
}

const METHODS = new Map(GRANTABLE_SERVICES.map((s) => [s.typeName, new Set(s.methods.map((m) => m.name))]));

function rpcProblem(rpc: string): string | undefined {
  const m = /^([A-Za-z0-9_.]+)\/([A-Za-z0-9_]+|\*)$/.exec(rpc);
  if (!m) return `"${rpc.slice(0, 120)}" is not package.Service/Method or package.Service/*`;
  const methods = METHODS.get(m[1]);
  if (!methods) return `no service ${m[1]} (services: ${[...METHODS.keys()].join(", ")})`;
  if (m[2] !== "*" && !methods.has(m[2])) return `${m[1]} has no method ${m[2]}`;
  return undefined;
}

/** Parses and checks a client file (JSON or YAML: JSON is read as YAML, which it is). */
export function parseInternalClients(text: string, file: string): InternalClient[] {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: false });
  const fail = (at: Node | null | undefined, reason: string): never => {
    throw new InternalClientsError(file, at?.range ? lines.linePos(at.range[0]).line : 1, reason);
  };
  const err = doc.errors[0];
  if (err) throw new InternalClientsError(file, lines.linePos(err.pos[0]).line, err.message.split("\n")[0]);
  const root = doc.contents;
  if (!isMap(root)) return fail(root, "the file must be a map with a list `clients`");
  const keyOf = (map: YAMLMap, allowed: string[]) => {
    for (const pair of map.items) {
      const k = isScalar(pair.key) ? String(pair.key.value) : "";
      if (!allowed.includes(k)) fail(pair.key as Node, `unknown key "${k.slice(0, 40)}" (expected ${allowed.join(", ")})`);
    }
  };
  keyOf(root, ["clients"]);
  const list = root.get("clients", true) as Node | undefined;
  if (!isSeq(list)) return fail(list ?? root, "`clients` must be a list");
  const seen = new Set<string>();
  return list.items.map((item) => {
    if (!isMap(item)) return fail(item as Node, "each client must be a map with name and allow");
    keyOf(item, ["name", "allow", "rate_per_minute"]);
    const nameNode = item.get("name", true) as Node | undefined;
    const name = isScalar(nameNode) ? nameNode.value : undefined;
    if (typeof name !== "string") return fail(nameNode ?? item, "a client needs a name (a string)");
    const bad = clientNameProblem(name);
    if (bad) fail(nameNode, bad);
    if (seen.has(name)) fail(nameNode, `client "${name}" is listed twice`);
    seen.add(name);
    const allowNode = item.get("allow", true) as Node | undefined;
    if (!isSeq(allowNode) || allowNode.items.length === 0) return fail(allowNode ?? item, `client "${name}": allow must be a non-empty list of RPCs`);
    const allow = allowNode.items.map((r) => {
      const v = isScalar(r) ? r.value : undefined;
      if (typeof v !== "string") return fail(r as Node, `client "${name}": each RPC must be a string`);
      const problem = rpcProblem(v);
      if (problem) fail(r as Node, `client "${name}": ${problem}`);
      return v;
    });
    const rateNode = item.get("rate_per_minute", true) as Node | undefined;
    const rate = isScalar(rateNode) ? rateNode.value : undefined;
    if (rateNode && !(typeof rate === "number" && Number.isInteger(rate) && rate >= 1))
      fail(rateNode, `client "${name}": rate_per_minute must be a whole number of calls, at least 1`);
    return { name, allow, ratePerMinute: rate as number | undefined };
  });
}

/** Reads and parses the file; the error names the file, the line and the reason. */
export function readInternalClients(file: string): InternalClient[] {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new InternalClientsError(file, 1, `cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  return parseInternalClients(text, file);
}

interface Grant {
  rpcs: Set<string>;
  services: Set<string>;
  rate?: number;
}

/** The clients of one file in this process: the table in use, reloads, and a per-client rate limit. */
export class InternalClients {
  private table = new Map<string, Grant>();

  constructor(
    readonly file: string,
    private readonly logger: Logger,
    private readonly defaultRate: number,
    /** Counts per client name: in Redis with REDIS_URL (across replicas), else in this process. */
    private readonly limiter: RateLimiter,
    /** The file's clients as read at start. */
    clients: InternalClient[],
  ) {
    this.set(clients);
  }

  private set(clients: InternalClient[]): void {
    this.table = new Map(
      clients.map((c) => [
        c.name,
        {
          rpcs: new Set(c.allow.filter((r) => !r.endsWith("/*"))),
          services: new Set(c.allow.filter((r) => r.endsWith("/*")).map((r) => r.slice(0, -2))),
          rate: c.ratePerMinute,
        },
      ]),
    );
  }

  /** Reads the file again; a bad file is logged (file, line, reason) and the table in use stays. */
  reload(): boolean {
    try {
      this.set(readInternalClients(this.file));
    } catch (e) {
      const r = e instanceof InternalClientsError ? { file: e.file, line: e.line, reason: e.reason } : { file: this.file, reason: (e as Error).message };
      this.logger.error(r, "internal clients: the file is not valid; keeping the clients in use");
      return false;
    }
    this.logger.info({ file: this.file, clients: [...this.table.keys()] }, "internal clients reloaded");
    return true;
  }

  /** The first of `names` that is a client allowed to call `service/method`, else undefined. */
  allowed(names: readonly string[], service: string, method: string): string | undefined {
    return names.find((n) => {
      const g = this.table.get(n);
      return g && (g.services.has(service) || g.rpcs.has(`${service}/${method}`));
    });
  }

  /** Takes one call from the client's budget (per minute). */
  consume(name: string): Promise<RateDecision> {
    return this.limiter.consume(`internal-client:${name}`, this.table.get(name)?.rate ?? this.defaultRate);
  }
}

const shared = new Map<string, { clients: InternalClients; users: number; close(): Promise<void> }>();
const onHangup = () => {
  for (const s of shared.values()) s.clients.reload();
};

/**
 * The clients of INTERNAL_CLIENTS_FILE for a service of this process (undefined when unset):
 * every service of the process shares one table, reloaded on SIGHUP. A bad file at start is a
 * ConfigError naming the line. `release()` when the service stops.
 */
export function acquireInternalClients(
  config: Pick<Config, "INTERNAL_CLIENTS_FILE" | "INTERNAL_CLIENT_RATE_PER_MINUTE"> &
    Partial<Pick<Config, "REDIS_URL" | "REDIS_TIMEOUT_MS" | "RETRY_BACKOFF_MAX_MS">>,
  logger: Logger,
): { clients: InternalClients; release(): Promise<void> } | undefined {
  if (!config.INTERNAL_CLIENTS_FILE) return undefined;
  const file = path.resolve(config.INTERNAL_CLIENTS_FILE);
  let entry = shared.get(file);
  if (!entry) {
    let initial: InternalClient[];
    try {
      initial = readInternalClients(file);
    } catch (e) {
      if (e instanceof InternalClientsError) throw new ConfigError(`invalid configuration: INTERNAL_CLIENTS_FILE ${e.message}`);
      throw e;
    }
    const rate = createRateLimiter(config, logger, Date.now, "internal-clients");
    entry = { clients: new InternalClients(file, logger, config.INTERNAL_CLIENT_RATE_PER_MINUTE, rate.limiter, initial), users: 0, close: rate.close };
    if (shared.size === 0) process.on("SIGHUP", onHangup);
    shared.set(file, entry);
  }
  const e = entry;
  e.users++;
  let released = false;
  return {
    clients: e.clients,
    async release() {
      if (released) return;
      released = true;
      if (--e.users > 0) return;
      shared.delete(file);
      if (shared.size === 0) process.off("SIGHUP", onHangup);
      await e.close();
    },
  };
}
