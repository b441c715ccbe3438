// A real authoritative DNS server on loopback UDP (and TCP, for truncated answers), speaking the
// DNS wire protocol through dns-packet over node:dgram. One instance listens on one port of one
// or more 127/8 addresses (every 127.0.0.0/8 address is loopback on Linux), each address a name
// server of its own with its own copy of the records, so two servers can disagree (one holding
// the TXT record, one stale). The same instance answers as the resolver named in DNS_RESOLVERS:
// it answers every name it knows, following CNAMEs inside its own data as a recursive resolver
// would, and answers NXDOMAIN for the rest.
//
//   const dns = await startDnsZones({
//     addresses: ["127.0.0.1", "127.0.0.2"],
//     records: {
//       "example.test": { NS: ["ns1.example.test", "ns2.example.test"], A: ["127.0.0.1"] },
//       "ns1.example.test": { A: ["127.0.0.1"] },
//       "ns2.example.test": { A: ["127.0.0.2"] },
//     },
//   });
//   dns.addTxt("_icv-challenge.example.test", "icv-verify=abc");           // on every server
//   dns.addTxt("_icv-challenge.example.test", "icv-verify=abc", "127.0.0.1"); // on one only
//   dns.behave("127.0.0.2", "silent");   // drops every query (a timeout); "REFUSED", "SERVFAIL"
//   env: DNS_RESOLVERS=dns.resolver, DNS_AUTHORITATIVE_PORT=String(dns.port)
//
// Names are lower case without the trailing dot. `zone(name, nameServers)` adds a zone whose NS
// names point at the given addresses in one call.
import dgram from "node:dgram";
import net from "node:net";
import * as packet from "dns-packet";

export interface DnsRecords {
  A?: string[];
  AAAA?: string[];
  NS?: string[];
  TXT?: string[];
  CNAME?: string;
}

export type ZoneData = Record<string, DnsRecords>;

/** How one address answers: normally, not at all (queries time out), or with an error code. */
export type Behaviour = "answer" | "silent" | "REFUSED" | "SERVFAIL";

export interface DnsQuery {
  /** The server address the query reached. */
  server: string;
  name: string;
  type: string;
  /** The client asked for recursion (a resolver query) or not (an authoritative query). */
  recursionDesired: boolean;
}

export interface DnsZones {
  port: number;
  addresses: string[];
  /** `127.0.0.1:{port}`: the value for DNS_RESOLVERS. */
  resolver: string;
  /** Every query received, in order. */
  queries: DnsQuery[];
  /** Adds (or replaces) records at `name`, on every server or on `only` (an address). */
  set(name: string, records: DnsRecords, only?: string): void;
  /** Removes every record at `name` (the name then answers NXDOMAIN), on every server or on `only`. */
  remove(name: string, only?: string): void;
  addTxt(name: string, value: string, only?: string): void;
  removeTxt(name: string, value: string, only?: string): void;
  /** The TXT values at `name` on `server` (default the first address). */
  txt(name: string, server?: string): string[];
  /** A zone: NS at `name` naming ns1.{name}, ns2.{name}, … with one address each. */
  zone(name: string, nameServerAddresses: string[], records?: DnsRecords): void;
  behave(server: string, behaviour: Behaviour): void;
  close(): Promise<void>;
}

const norm = (name: string) => name.toLowerCase().replace(/\.$/, "");
const clone = (z: ZoneData): ZoneData => JSON.parse(JSON.stringify(z)) as ZoneData;

export async function startDnsZones(opts: { addresses?: string[]; port?: number; records?: ZoneData } = {}): Promise<DnsZones> {
  const addresses = opts.addresses ?? ["127.0.0.1"];
  const data = new Map<string, ZoneData>(
    addresses.map((a) => [a, clone(Object.fromEntries(Object.entries(opts.records ?? {}).map(([k, v]) => [norm(k), v])))]),
  );
  const behaviour = new Map<string, Behaviour>(addresses.map((a) => [a, "answer"]));
  const queries: DnsQuery[] = [];
  const targets = (only?: string) => (only ? [data.get(only) ?? fail(`${only} is not one of this server's addresses`)] : [...data.values()]);

  /** The answer records for name/type from one server's data, CNAMEs followed inside it. */
  function lookup(zone: ZoneData, qname: string, qtype: string): { rcode: number; answers: packet.Answer[] } {
    const answers: packet.Answer[] = [];
    let name = norm(qname);
    const seen = new Set<string>();
    for (let hop = 0; hop < 8; hop++) {
      // a CNAME loop: the chain so far, as an authoritative server answers it
      if (seen.has(name)) return { rcode: 0, answers };
      seen.add(name);
      const node = zone[name];
      if (!node) return { rcode: hop === 0 ? 3 : 0, answers };
      if (node.CNAME && qtype !== "CNAME") {
        answers.push({ type: "CNAME", name, ttl: 60, data: node.CNAME });
        name = norm(node.CNAME);
        continue;
      }
      const values = (node as Record<string, string[] | string | undefined>)[qtype];
      const list = values === undefined ? [] : Array.isArray(values) ? values : [values];
      for (const v of list) {
        if (qtype === "TXT") answers.push({ type: "TXT", name, ttl: 60, data: [Buffer.from(v)] });
        else answers.push({ type: qtype as "A", name, ttl: 60, data: v });
      }
      return { rcode: 0, answers };
    }
    return { rcode: 2, answers };
  }

  /** The response to one query, or undefined to stay silent. */
  function respond(server: string, msg: Buffer, maxUdp?: number): Buffer | undefined {
    let q: packet.DecodedPacket;
    try {
      q = packet.decode(msg);
    } catch {
      return undefined;
    }
    const question = q.questions?.[0];
    if (!question) return undefined;
    queries.push({ server, name: norm(question.name), type: question.type, recursionDesired: q.flag_rd });
    const how = behaviour.get(server) ?? "answer";
    if (how === "silent") return undefined;
    let rcode = how === "REFUSED" ? 5 : how === "SERVFAIL" ? 2 : 0;
    let answers: packet.Answer[] = [];
    if (rcode === 0) ({ rcode, answers } = lookup(data.get(server)!, question.name, question.type));
    const reply = (list: packet.Answer[], truncated: boolean) =>
      packet.encode({
        type: "response",
        id: q.id,
        flags:
          packet.AUTHORITATIVE_ANSWER |
          (q.flag_rd ? packet.RECURSION_DESIRED | packet.RECURSION_AVAILABLE : 0) |
          (truncated ? packet.TRUNCATED_RESPONSE : 0) |
          rcode,
        questions: [question],
        answers: list,
      });
    const full = reply(answers, false);
    if (maxUdp !== undefined && full.length > maxUdp) return reply([], true);
    return full;
  }

  const sockets: dgram.Socket[] = [];
  const tcpServers: net.Server[] = [];
  const connections = new Set<net.Socket>();

  /** UDP and TCP on `port` of every address (0: a free one, taken from the first UDP bind). */
  async function bindAll(first: number): Promise<number> {
    let port = first;
    for (const address of addresses) {
      const sock = dgram.createSocket("udp4");
      sockets.push(sock);
      await new Promise<void>((resolve, reject) => {
        sock.once("error", reject);
        sock.bind(port, address, () => resolve());
      });
      port = sock.address().port;
      sock.on("message", (msg, rinfo) => {
        const out = respond(address, msg, 512);
        if (out) sock.send(out, rinfo.port, rinfo.address);
      });
      // DNS over TCP: two-byte length prefix per message (what a client does after a truncated answer)
      const tcp = net.createServer((conn) => {
        connections.add(conn);
        conn.on("close", () => connections.delete(conn));
        let buf = Buffer.alloc(0);
        conn.on("data", (c: Buffer) => {
          buf = Buffer.concat([buf, c]);
          while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
            const len = buf.readUInt16BE(0);
            const out = respond(address, buf.subarray(2, 2 + len));
            buf = buf.subarray(2 + len);
            if (out) conn.write(Buffer.concat([Buffer.from([out.length >> 8, out.length & 0xff]), out]));
          }
        });
        conn.on("error", () => undefined);
      });
      tcpServers.push(tcp);
      await new Promise<void>((resolve, reject) => {
        tcp.once("error", reject);
        tcp.listen(port, address, () => resolve());
      });
    }
    return port;
  }

  const closeAll = async () => {
    for (const c of connections) c.destroy();
    await Promise.all([
      ...sockets.splice(0).map((s) => new Promise<void>((r) => s.close(() => r()))),
      ...tcpServers.splice(0).map((t) => new Promise<void>((r) => (t.listening ? t.close(() => r()) : r()))),
    ]);
  };
  let port = 0;
  // a free UDP port may be taken for TCP, or on another 127/8 address, by another process: try another
  for (let attempt = 1; ; attempt++) {
    try {
      port = await bindAll(opts.port ?? 0);
      break;
    } catch (e) {
      await closeAll();
      if (opts.port !== undefined || attempt >= 10 || (e as NodeJS.ErrnoException).code !== "EADDRINUSE") throw e;
    }
  }

  const api: DnsZones = {
    port,
    addresses,
    resolver: `${addresses[0]}:${port}`,
    queries,
    set(name, records, only) {
      for (const z of targets(only)) z[norm(name)] = { ...z[norm(name)], ...clone({ r: records }).r };
    },
    remove(name, only) {
      for (const z of targets(only)) delete z[norm(name)];
    },
    addTxt(name, value, only) {
      for (const z of targets(only)) {
        const node = (z[norm(name)] ??= {});
        node.TXT = [...(node.TXT ?? []), value];
      }
    },
    removeTxt(name, value, only) {
      for (const z of targets(only)) {
        const node = z[norm(name)];
        if (!node?.TXT) continue;
        node.TXT = node.TXT.filter((v) => v !== value);
        if (!node.TXT.length && Object.keys(node).length === 1) delete z[norm(name)];
      }
    },
    txt(name, server = addresses[0]) {
      return [...(data.get(server)?.[norm(name)]?.TXT ?? [])];
    },
    zone(name, nameServerAddresses, records = {}) {
      const ns = nameServerAddresses.map((_, i) => `ns${i + 1}.${norm(name)}`);
      api.set(name, { NS: ns, ...records });
      nameServerAddresses.forEach((a, i) => {
        api.set(ns[i], { A: [a] });
      });
    },
    behave(server, how) {
      if (!behaviour.has(server)) fail(`${server} is not one of this server's addresses`);
      behaviour.set(server, how);
    },
    close: closeAll,
  };
  return api;
}

function fail(message: string): never {
  throw new Error(message);
}
