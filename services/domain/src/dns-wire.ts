/**
 * One DNS question to one server, on the wire (dns-packet over node:dgram, TCP when the UDP
 * answer comes back truncated), and the resolver look-ups built on it: a domain's name servers
 * and a host's addresses, asked of DNS_RESOLVERS. No cache: a check sees what the servers say now.
 */
import { randomInt } from "node:crypto";
import dgram from "node:dgram";
import { getServers } from "node:dns";
import net from "node:net";
import * as packet from "dns-packet";

export interface DnsServer {
  host: string;
  port: number;
}

export const serverText = (s: DnsServer) => (net.isIPv6(s.host) ? `[${s.host}]:${s.port}` : `${s.host}:${s.port}`);

/** "host:port" → server ("[::1]:53" for IPv6). */
export function parseServer(text: string, defaultPort = 53): DnsServer {
  const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(text) ?? /^([^:]+)(?::(\d+))?$/.exec(text);
  if (!m) return { host: text, port: defaultPort };
  return { host: m[1], port: m[2] ? Number(m[2]) : defaultPort };
}

/** DNS_RESOLVERS, else the system's resolvers (node:dns getServers: "a.b.c.d", "[v6]:port", …). */
export const resolversFrom = (list: readonly string[] | undefined): DnsServer[] =>
  (list?.length ? list : getServers()).map((s) => (net.isIP(s) ? { host: s, port: 53 } : parseServer(s)));

/** What one server said: a response (any rcode), or why there was none. */
export type DnsAnswer =
  | { ok: true; rcode: string; authoritative: boolean; answers: packet.Answer[]; additionals: packet.Answer[] }
  | { ok: false; error: string };

const EDNS_UDP_SIZE = 1232;

/**
 * The DNS load on one name server is bounded: at most `perServer` questions in flight to one
 * address from this process (scheduled re-checks of many domains on one DNS host wait their turn
 * instead of flooding it). Waiting does not count against a question's own timeout.
 */
const inflight = new Map<string, { active: number; waiting: (() => void)[] }>();

async function slot(key: string, limit: number): Promise<() => void> {
  let s = inflight.get(key);
  if (!s) inflight.set(key, (s = { active: 0, waiting: [] }));
  const state = s;
  if (state.active >= limit) await new Promise<void>((go) => state.waiting.push(go));
  else state.active++;
  return () => {
    const next = state.waiting.shift();
    if (next) next();
    else if (--state.active === 0) inflight.delete(key);
  };
}

/** Asks one question; never throws: a timeout or a network error is an answer of its own. */
export async function query(
  server: DnsServer,
  name: string,
  type: packet.RecordType,
  opts: { timeoutMs: number; recursive: boolean; perServer?: number },
): Promise<DnsAnswer> {
  if (!opts.perServer) return ask(server, name, type, opts);
  const release = await slot(serverText(server), opts.perServer);
  try {
    return await ask(server, name, type, opts);
  } finally {
    release();
  }
}

async function ask(server: DnsServer, name: string, type: packet.RecordType, opts: { timeoutMs: number; recursive: boolean }): Promise<DnsAnswer> {
  const id = randomInt(0, 65536);
  const msg = packet.encode({
    type: "query",
    id,
    flags: opts.recursive ? packet.RECURSION_DESIRED : 0,
    questions: [{ type, name, class: "IN" }],
    additionals: [{ type: "OPT", name: ".", udpPayloadSize: EDNS_UDP_SIZE, extendedRcode: 0, ednsVersion: 0, flags: 0, flag_do: false, options: [] }],
  });
  const deadline = Date.now() + opts.timeoutMs;
  let reply = await overUdp(server, msg, id, name, opts.timeoutMs);
  if (reply instanceof Error) return { ok: false, error: reply.message };
  if (reply.flag_tc) {
    const tcp = await overTcp(server, msg, id, name, Math.max(1, deadline - Date.now()));
    if (tcp instanceof Error) return { ok: false, error: `truncated UDP answer, then over TCP: ${tcp.message}` };
    reply = tcp;
  }
  return {
    ok: true,
    rcode: (reply as { rcode?: string }).rcode ?? "NOERROR",
    authoritative: reply.flag_aa,
    answers: reply.answers ?? [],
    additionals: reply.additionals ?? [],
  };
}

/** A decoded reply that answers our question (id and name), else undefined. */
function matching(buf: Buffer, id: number, name: string): packet.DecodedPacket | undefined {
  try {
    const p = packet.decode(buf);
    const q = p.questions?.[0];
    if (p.id !== id || p.type !== "response" || !q || q.name.toLowerCase() !== name.toLowerCase()) return undefined;
    return p;
  } catch {
    return undefined;
  }
}

const networkError = (e: NodeJS.ErrnoException) =>
  new Error(e.code === "ECONNREFUSED" ? "connection refused" : e.code === "EHOSTUNREACH" || e.code === "ENETUNREACH" ? "unreachable" : e.message);

function overUdp(server: DnsServer, msg: Buffer, id: number, name: string, timeoutMs: number): Promise<packet.DecodedPacket | Error> {
  return new Promise((resolve) => {
    const sock = dgram.createSocket(net.isIPv6(server.host) ? "udp6" : "udp4");
    const finish = (r: packet.DecodedPacket | Error) => {
      clearTimeout(timer);
      sock.close();
      resolve(r);
    };
    const timer = setTimeout(() => finish(new Error(`timeout after ${timeoutMs} ms`)), timeoutMs);
    sock.on("error", (e) => finish(networkError(e)));
    // answers from another address or with another id are ignored (spoofing, stray replies)
    sock.on("message", (buf, rinfo) => {
      const p = rinfo.address === server.host || net.isIP(server.host) === 0 ? matching(buf, id, name) : undefined;
      if (p) finish(p);
    });
    sock.send(msg, server.port, server.host, (e) => e && finish(networkError(e)));
  });
}

function overTcp(server: DnsServer, msg: Buffer, id: number, name: string, timeoutMs: number): Promise<packet.DecodedPacket | Error> {
  return new Promise((resolve) => {
    const conn = net.connect({ host: server.host, port: server.port });
    let buf = Buffer.alloc(0);
    const finish = (r: packet.DecodedPacket | Error) => {
      clearTimeout(timer);
      conn.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => finish(new Error(`timeout after ${timeoutMs} ms`)), timeoutMs);
    conn.on("error", (e) => finish(networkError(e)));
    conn.on("connect", () => conn.write(Buffer.concat([Buffer.from([msg.length >> 8, msg.length & 0xff]), msg])));
    conn.on("data", (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        finish(matching(buf.subarray(2, 2 + buf.readUInt16BE(0)), id, name) ?? new Error("unexpected answer over TCP"));
      }
    });
    conn.on("end", () => finish(new Error("connection closed before an answer")));
  });
}

export interface ResolverOptions {
  resolvers: DnsServer[];
  timeoutMs: number;
  /** Questions in flight to one authoritative server at most (DNS_MAX_INFLIGHT_PER_SERVER). */
  perServer?: number;
}

/** Asks the resolvers in turn until one gives an answer (a response that is not SERVFAIL/REFUSED). */
export async function resolve(name: string, type: packet.RecordType, opts: ResolverOptions): Promise<DnsAnswer> {
  let last: DnsAnswer = { ok: false, error: "no resolver configured" };
  for (const r of opts.resolvers) {
    last = await query(r, name, type, { timeoutMs: opts.timeoutMs, recursive: true });
    if (last.ok && last.rcode !== "SERVFAIL" && last.rcode !== "REFUSED") return last;
  }
  return last;
}

/** A record's data (every answer type but OPT has one). */
export const dataOf = (a: packet.Answer): unknown => (a as { data?: unknown }).data;

const norm = (n: string) => n.toLowerCase().replace(/\.$/, "");

/** The records of `type` for `name` in an answer, a CNAME chain inside the answer followed. */
export function recordsOf(answers: packet.Answer[], name: string, type: "A" | "AAAA" | "NS" | "TXT"): packet.Answer[] {
  let current = norm(name);
  for (let hop = 0; hop < 8; hop++) {
    const here = answers.filter((a) => norm(a.name) === current);
    const direct = here.filter((a) => a.type === type);
    if (direct.length) return direct;
    const cname = here.find((a) => a.type === "CNAME");
    if (!cname) return [];
    current = norm(dataOf(cname) as string);
  }
  return [];
}

export interface ZoneServers {
  /** The zone whose NS records were found (the name itself or a parent). */
  zone: string;
  /** Name server names with their addresses (at most `max` addresses in all). */
  servers: { name: string; address: string }[];
  /** Name servers whose addresses could not be found. */
  unresolved: string[];
}

/**
 * The authoritative servers of `name`: the NS records of the closest enclosing zone (the name,
 * then each parent down to two labels) and their addresses (IPv4; IPv6 when a name has none),
 * at most `max` addresses, glue from the resolver's answer used when present.
 */
export async function authoritativeServers(name: string, opts: ResolverOptions & { max: number }): Promise<ZoneServers | { error: string }> {
  const found = await zoneNameServers(name, opts);
  if ("error" in found) return found;
  const servers: ZoneServers["servers"] = [];
  const unresolved: string[] = [];
  // the first `max` names' addresses, looked up together (glue when the resolver sent it)
  const hosts = found.nameServers.slice(0, opts.max);
  const resolved = await Promise.all(
    hosts.map((host) => {
      const glue = found.glue.filter((a) => norm(a.name) === host && a.type === "A").map((a) => dataOf(a) as string);
      return glue.length ? glue : addressesOf(host, opts);
    }),
  );
  hosts.forEach((host, i) => {
    if (!resolved[i].length) unresolved.push(host);
  });
  // round by round, one address of each name server: every name server is asked before any gets a
  // second address (a name server with many addresses cannot fill the slots and leave another unasked)
  for (let round = 0; servers.length < opts.max && hosts.some((_, i) => round < resolved[i].length); round++) {
    hosts.forEach((host, i) => {
      const address = resolved[i][round];
      if (address !== undefined && servers.length < opts.max && !servers.some((s) => s.address === address)) servers.push({ name: host, address });
    });
  }
  return { zone: found.zone, servers, unresolved };
}

/**
 * The NS host names of the closest zone enclosing `name` (the name, then each parent down to two
 * labels), sorted, with the glue records the resolver sent along.
 */
export async function zoneNameServers(
  name: string,
  opts: ResolverOptions,
): Promise<{ zone: string; nameServers: string[]; glue: packet.Answer[] } | { error: string }> {
  const labels = norm(name).split(".");
  let lastError = "";
  for (let i = 0; i <= labels.length - 2; i++) {
    const zone = labels.slice(i).join(".");
    const r = await resolve(zone, "NS", opts);
    if (!r.ok) {
      lastError = `the resolver did not answer the NS query for ${zone} (${r.error})`;
      continue;
    }
    // only NS records owned by this very name: a CNAME here is not a zone cut
    const ns = [...new Set(r.answers.filter((a) => a.type === "NS" && norm(a.name) === zone).map((a) => norm(dataOf(a) as string)))].sort();
    if (ns.length) return { zone, nameServers: ns, glue: r.additionals };
  }
  return { error: lastError || `no name servers found for ${norm(name)}` };
}

/** A host's addresses through the resolvers: IPv4, else IPv6. Empty when it has none. */
export async function addressesOf(host: string, opts: ResolverOptions): Promise<string[]> {
  if (net.isIP(host)) return [host];
  for (const type of ["A", "AAAA"] as const) {
    const r = await resolve(host, type, opts);
    if (r.ok && r.rcode === "NOERROR") {
      const list = recordsOf(r.answers, host, type).map((a) => dataOf(a) as string);
      if (list.length) return list;
    }
    if (r.ok && r.rcode === "NXDOMAIN") return [];
  }
  return [];
}
