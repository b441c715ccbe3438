import { lookup as dnsLookup } from "node:dns/promises";
import http from "node:http";
import https from "node:https";
import { isIP, type LookupFunction } from "node:net";
import ipaddr from "ipaddr.js";

/**
 * The HTTP client for every URL a tenant gives us (webhooks, domain HTTP checks). It refuses
 * targets inside our network (SSRF): the host name is resolved once, every address it resolves
 * to must be public unicast, and the connection goes to that checked address (a pinned lookup,
 * so a second DNS answer cannot swap in 127.0.0.1), with Host and TLS SNI kept as the URL's
 * host. Redirects are never followed (a 3xx is the answer), so no hop escapes the check.
 * `allowPrivate` turns the address check off (local
 * development, tests).
 */

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Host name → every address it resolves to (injectable for tests). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = async (hostname) =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));

export type OutboundErrorKind = "invalid_url" | "refused" | "timeout" | "network" | "aborted";

/** Why a request did not get a response; `message` is fit to show the tenant. */
export class OutboundError extends Error {
  constructor(
    readonly kind: OutboundErrorKind,
    message: string,
  ) {
    super(message);
    this.name = "OutboundError";
  }
}

const METADATA = new Set(["169.254.169.254", "fd00:ec2::254"]);

const RANGE_NAMES: Record<string, string> = {
  unspecified: "an unspecified address",
  broadcast: "a broadcast address",
  multicast: "a multicast address",
  linkLocal: "a link-local address",
  loopback: "a loopback address",
  carrierGradeNat: "a carrier-grade NAT (CGNAT) address",
  private: "a private address",
  uniqueLocal: "a unique-local address",
  deprecatedSiteLocal: "a site-local address",
  rfc6145: "an IPv4-translated address",
  rfc6052: "a NAT64 address",
  "6to4": "a 6to4 address",
  teredo: "a Teredo address",
};

/**
 * Why `address` may not be a target ("127.0.0.1 is a loopback address"), or undefined when it
 * is public unicast. IPv4-mapped IPv6 addresses are judged as the IPv4 address they carry.
 */
export function addressRefusal(address: string): string | undefined {
  let ip: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    ip = ipaddr.parse(address);
  } catch {
    return `${address} is not an IP address`;
  }
  if (ip.kind() === "ipv6" && (ip as ipaddr.IPv6).isIPv4MappedAddress()) ip = (ip as ipaddr.IPv6).toIPv4Address();
  if (ip.kind() === "ipv6") {
    // ::/96 (IPv4-compatible, deprecated) is "unicast" to ipaddr.js; only :: and ::1 are named
    const p = (ip as ipaddr.IPv6).parts;
    if (p.slice(0, 6).every((x) => x === 0) && (p[6] !== 0 || p[7] > 1)) return `${address} is an IPv4-compatible address`;
  }
  const text = ip.toString();
  if (METADATA.has(text)) return `${address} is a cloud metadata address`;
  const range = ip.range();
  if (range === "unicast") return undefined;
  return `${address} is ${RANGE_NAMES[range] ?? "a reserved address"}`;
}

/** Said when a URL is refused as it is set: how a local receiver is allowed (never in production). */
export const PRIVATE_HINT = "loopback and private addresses are allowed only with ALLOW_PRIVATE_TARGETS=true (local development)";

/**
 * A tenant-given URL checked when it is set (webhook endpoints): parsed as parseTargetUrl does,
 * then, unless allowPrivate, its host (an IP literal in any textual form, or every address the
 * name resolves to) must be public unicast. Sending checks again, on the address it connects to.
 * `allowUnresolved`: a name that resolves to nothing (yet) passes (a logo shown later).
 */
export async function checkTargetUrl(input: string, opts: { allowPrivate: boolean; resolver?: Resolver; allowUnresolved?: boolean }): Promise<URL> {
  const url = parseTargetUrl(input.trim());
  if (opts.allowPrivate) return url;
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const literal = isIP(host) > 0;
  const addresses = literal ? [host] : (await (opts.resolver ?? systemResolver)(host).catch(() => [])).map((a) => a.address);
  if (!addresses.length) {
    if (opts.allowUnresolved) return url; // a name not set up yet: checked like every address when fetched
    throw new OutboundError("invalid_url", `${host} does not resolve`);
  }
  for (const a of addresses) {
    const why = addressRefusal(a);
    if (why) throw new OutboundError("refused", `refused: ${why}${literal ? "" : ` (${host} resolves to it)`}; ${PRIVATE_HINT}`);
  }
  return url;
}

export interface UrlRules {
  /** Longest accepted URL in characters (default 2048). */
  maxLength?: number;
}

/**
 * Parses a tenant-given target URL: absolute http(s), no user name or password, at most
 * maxLength characters. Throws OutboundError("invalid_url") with the reason.
 */
export function parseTargetUrl(input: string | URL, rules: UrlRules = {}): URL {
  const max = rules.maxLength ?? 2048;
  const text = String(input);
  if (text.length > max) throw new OutboundError("invalid_url", `URL is longer than ${max} characters`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new OutboundError("invalid_url", "not an absolute URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new OutboundError("invalid_url", `only http and https URLs are allowed, not ${url.protocol.slice(0, -1)}`);
  if (url.username || url.password) throw new OutboundError("invalid_url", "URL must not contain credentials");
  if (!url.hostname) throw new OutboundError("invalid_url", "URL has no host");
  return url;
}

export interface OutboundOptions {
  /** Skip the address check (ALLOW_PRIVATE_TARGETS=true). */
  allowPrivate: boolean;
  /** Whole-request deadline: DNS, connect, TLS, response and body (default 10 s). */
  timeoutMs?: number;
  /** Response body bytes kept (default 4096); the rest is read and dropped, up to 1 MiB. */
  maxBodyBytes?: number;
  resolver?: Resolver;
  /** Pooled keep-alive sockets per target host (default 64). */
  maxSockets?: number;
  /**
   * Body bytes read past maxBodyBytes before the connection is cut (default 1 MiB, so the
   * socket can be reused); 0 stops reading at the limit (the domain check reads at most 4 KB).
   */
  drainLimit?: number;
  /**
   * Non-public addresses allowed all the same: an exception narrower than allowPrivate, so a
   * test on loopback can still prove that any other private address is refused.
   */
  allowAddress?: (address: string) => boolean;
  /** Verify the server's TLS certificate (default true). */
  rejectUnauthorized?: boolean;
  /** Keep connections open for reuse (default true; the domain check opens one per fetch). */
  keepAlive?: boolean;
  /** How long a pooled connection may sit idle before we close it (default 4 s: below the common 5 s server keep-alive). */
  idleSocketMs?: number;
}

export interface OutboundRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Overrides the client's timeout for this call. */
  timeoutMs?: number;
  /** Cancels the call (OutboundError "aborted"). */
  signal?: AbortSignal;
}

export interface OutboundResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The first maxBodyBytes of the body, as UTF-8. */
  body: string;
  /** The same bytes, as received (binary bodies: images). */
  bytes: Buffer;
  /** The address the request went to. */
  address: string;
  /** The body was longer than maxBodyBytes (only the first maxBodyBytes are in `body`). */
  truncated?: boolean;
}

export interface OutboundClient {
  request(url: string | URL, req?: OutboundRequest): Promise<OutboundResponse>;
  /** Closes the pooled sockets. */
  close(): void;
}

const DRAIN_LIMIT = 1024 * 1024;
const IDLE_SOCKET_MS = 4_000;
/** How a pooled connection the receiver had already closed fails a request written on it. */
const STALE = new Set(["ECONNRESET", "EPIPE", "ECONNABORTED"]);

/** The lookup of one request: answers the already checked address, whatever the host name. */
const pinned = (target: ResolvedAddress): LookupFunction =>
  ((_host: string, options: { all?: boolean }, cb: (...args: unknown[]) => void) => {
    if (options?.all) cb(null, [{ address: target.address, family: target.family }]);
    else cb(null, target.address, target.family);
  }) as unknown as LookupFunction;

const networkMessage = (e: NodeJS.ErrnoException): string => {
  const what: Record<string, string> = {
    ECONNREFUSED: "connection refused",
    ECONNRESET: "connection reset",
    ENOTFOUND: "host not found",
    EAI_AGAIN: "DNS lookup failed (temporary)",
    EHOSTUNREACH: "host unreachable",
    ENETUNREACH: "network unreachable",
    EPIPE: "connection closed while sending",
  };
  return e.code && what[e.code] ? `${what[e.code]} (${e.code})` : e.message || String(e);
};

export function createOutboundClient(opts: OutboundOptions): OutboundClient {
  const resolver = opts.resolver ?? systemResolver;
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const keep = opts.maxBodyBytes ?? 4096;
  const drainLimit = opts.drainLimit ?? DRAIN_LIMIT;
  const agentOptions = {
    keepAlive: opts.keepAlive ?? true,
    maxSockets: opts.maxSockets ?? 64,
    maxFreeSockets: opts.maxSockets ?? 64,
    scheduling: "lifo" as const,
  };
  const agents = {
    "http:": new http.Agent(agentOptions),
    "https:": new https.Agent({ ...agentOptions, rejectUnauthorized: opts.rejectUnauthorized ?? true }),
  };
  for (const agent of Object.values(agents)) closeIdle(agent, opts.idleSocketMs ?? IDLE_SOCKET_MS);
  /** New connections only, closed after their request (the retry on a fresh connection). */
  const freshAgents = {
    "http:": new http.Agent({ keepAlive: false }),
    "https:": new https.Agent({ keepAlive: false, rejectUnauthorized: opts.rejectUnauthorized ?? true }),
  };

  /** The address to connect to, after checking every address the host resolves to. */
  async function target(url: URL, signal: AbortSignal): Promise<ResolvedAddress> {
    const host = url.hostname.replace(/^\[|\]$/g, "");
    const family = isIP(host);
    let addresses: ResolvedAddress[];
    if (family) addresses = [{ address: host, family: family as 4 | 6 }];
    else {
      try {
        addresses = await abortable(resolver(host), signal);
      } catch (e) {
        if (e instanceof OutboundError) throw e;
        throw new OutboundError("network", `DNS lookup of ${host} failed: ${networkMessage(e as NodeJS.ErrnoException)}`);
      }
      if (!addresses.length) throw new OutboundError("network", `DNS lookup of ${host} found no address`);
    }
    if (!opts.allowPrivate) {
      for (const a of addresses) {
        const why = opts.allowAddress?.(a.address) ? undefined : addressRefusal(a.address);
        if (why) throw new OutboundError("refused", `refused: ${why}${family ? "" : ` (${host} resolves to it)`}`);
      }
    }
    return addresses[0];
  }

  /**
   * One request; `fresh`: on a new connection, not a pooled one. A request written on a pooled
   * connection that fails before any response byte (reset, broken pipe) met a connection the
   * receiver had closed while it sat idle: it is sent again at once, once, on a fresh connection.
   */
  function send(url: URL, to: ResolvedAddress, req: OutboundRequest, signal: AbortSignal, fresh = false): Promise<OutboundResponse> {
    return new Promise((resolve, reject) => {
      const body = req.body === undefined ? undefined : Buffer.isBuffer(req.body) ? req.body : Buffer.from(req.body);
      const headers: Record<string, string | number> = { ...req.headers };
      if (body) headers["content-length"] = body.length;
      const r = (url.protocol === "https:" ? https : http).request({
        protocol: url.protocol,
        hostname: url.hostname.replace(/^\[|\]$/g, ""),
        port: url.port || undefined,
        path: `${url.pathname}${url.search}`,
        method: req.method ?? "GET",
        headers,
        // the one retry goes on a connection of its own (the pool may hold more stale ones)
        agent: fresh ? freshAgents[url.protocol as "http:" | "https:"] : agents[url.protocol as "http:" | "https:"],
        lookup: pinned(to),
        signal,
      });
      let answered = false;
      r.on("error", (e: NodeJS.ErrnoException) => {
        if (signal.aborted) return reject(signal.reason);
        if (!fresh && !answered && r.reusedSocket && e.code && STALE.has(e.code)) return resolve(send(url, to, req, signal, true));
        reject(new OutboundError("network", networkMessage(e)));
      });
      r.on("response", (res) => {
        answered = true;
        const chunks: Buffer[] = [];
        let kept = 0;
        let seen = 0;
        res.on("data", (c: Buffer) => {
          seen += c.length;
          if (kept < keep) {
            const part = c.subarray(0, keep - kept);
            chunks.push(part);
            kept += part.length;
          }
          if (seen > keep + drainLimit) res.destroy();
        });
        const done = () => {
          const bytes = Buffer.concat(chunks);
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: bytes.toString("utf8"),
            bytes,
            address: to.address,
            truncated: seen > keep,
          });
        };
        res.on("end", done);
        // a body cut off after the status arrived still counts as that status
        res.on("close", () => (res.complete ? undefined : signal.aborted ? reject(signal.reason) : done()));
        res.on("error", () => undefined);
      });
      r.end(body);
    });
  }

  return {
    async request(input, req = {}) {
      const url = parseTargetUrl(input);
      const ms = req.timeoutMs ?? timeoutMs;
      const ac = new AbortController();
      const timer = setTimeout(() => ac.abort(new OutboundError("timeout", `timed out after ${ms} ms`)), ms);
      const onAbort = () => ac.abort(new OutboundError("aborted", "request aborted"));
      req.signal?.addEventListener("abort", onAbort, { once: true });
      if (req.signal?.aborted) onAbort();
      try {
        const to = await target(url, ac.signal);
        return await send(url, to, req, ac.signal);
      } finally {
        clearTimeout(timer);
        req.signal?.removeEventListener("abort", onAbort);
      }
    },
    close() {
      for (const a of [agents, freshAgents]) {
        a["http:"].destroy();
        a["https:"].destroy();
      }
    },
  };
}

/**
 * Closes a pooled connection that sat idle `ms` since it was last freed, before the receiver's
 * own keep-alive timer (Node's 5 s) can close it under a request we are sending. (Not the agent's
 * `timeout` option: that is the socket's inactivity timer, which also runs while a request waits
 * for a slow answer.)
 */
function closeIdle(agent: http.Agent, ms: number): void {
  const timers = new WeakMap<object, NodeJS.Timeout>();
  agent.on("free", (socket: import("node:net").Socket, options: http.ClientRequestArgs) => {
    clearTimeout(timers.get(socket));
    const timer = setTimeout(() => {
      if (agent.freeSockets[agent.getName(options)]?.includes(socket)) socket.destroy();
    }, ms);
    timer.unref();
    timers.set(socket, timer);
  });
}

/** Rejects with the signal's reason as soon as it aborts. */
function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
