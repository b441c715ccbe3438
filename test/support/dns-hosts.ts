// Local stand-ins for the DNS hosts' APIs, on 127.0.0.1: each speaks its provider's real HTTP API
// (paths, auth headers, JSON or XML bodies, error shapes), checks the credentials as the provider
// does (Route53: the AWS Signature Version 4 recomputed here from the secret, independently of
// the client's signing library), records every write and delete, and publishes what is written
// in a test DNS server (./dns-server.ts) so a DNS check can find it.
//
//   const dns = await startDnsZones({ addresses: ["127.0.0.1", "127.0.0.2"] });
//   dns.zone("example.test", ["127.0.0.1", "127.0.0.2"]);
//   const api = await startDnsHostApi("cloudflare", { dns, zones: ["example.test"] });
//   env: DNS_API_CLOUDFLARE_URL=api.url; credentials for the call: api.credentials
//   api.writes / api.deletes: [{ name, value }]; api.records(): what the zone holds now
//
// `publish` says where a written record becomes visible: "all" servers (default), one address
// (the other servers stay stale, so the check fails), or "none".
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import type { DnsZones } from "./dns-server.ts";

export type DnsHost = "cloudflare" | "digitalocean" | "godaddy" | "route53";

export interface DnsRecordChange {
  name: string;
  value: string;
}

export interface DnsHostApi {
  provider: DnsHost;
  /** The base URL for DNS_API_{PROVIDER}_URL (with the API's version path, as the default is). */
  url: string;
  /** The credentials this server accepts, in the RPC's shape (api_token; token; key, secret; access_key_id, secret_access_key). */
  credentials: Record<string, string>;
  writes: DnsRecordChange[];
  deletes: DnsRecordChange[];
  /** Requests refused for their credentials. */
  refused: number;
  /** TXT records the API holds now. */
  records(): DnsRecordChange[];
  /** A record the account already holds (made outside the API calls under test; published too). */
  seed(name: string, value: string): void;
  close(): Promise<void>;
}

export interface DnsHostOptions {
  dns?: DnsZones;
  /** The zones the account holds (names without the trailing dot). */
  zones: string[];
  credentials?: Record<string, string>;
  publish?: "all" | "none" | string;
}

interface Stored {
  id: string;
  zone: string;
  name: string;
  value: string;
}

type Reply = { status: number; body?: string; type?: string };
const json = (status: number, body?: unknown): Reply => ({
  status,
  body: body === undefined ? undefined : JSON.stringify(body),
  type: "application/json",
});
const xml = (status: number, body: string): Reply => ({
  status,
  body: `<?xml version="1.0" encoding="UTF-8"?>\n${body}`,
  type: "text/xml",
});
const safeEqual = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
const unquote = (v: string) => (v.length >= 2 && v.startsWith('"') && v.endsWith('"') ? v.slice(1, -1) : v);

const DEFAULT_CREDENTIALS: Record<DnsHost, () => Record<string, string>> = {
  cloudflare: () => ({ api_token: `cf-${randomBytes(20).toString("hex")}` }),
  digitalocean: () => ({ token: `dop_v1_${randomBytes(32).toString("hex")}` }),
  godaddy: () => ({ key: `gd-key-${randomBytes(12).toString("hex")}`, secret: `gd-secret-${randomBytes(12).toString("hex")}` }),
  route53: () => ({
    access_key_id: `AKIA${randomBytes(8).toString("hex").toUpperCase()}`,
    secret_access_key: randomBytes(30).toString("base64"),
  }),
};

export async function startDnsHostApi(provider: DnsHost, opts: DnsHostOptions): Promise<DnsHostApi> {
  const credentials = opts.credentials ?? DEFAULT_CREDENTIALS[provider]();
  const zones = opts.zones.map((z) => z.toLowerCase());
  const stored: Stored[] = [];
  const writes: DnsRecordChange[] = [];
  const deletes: DnsRecordChange[] = [];
  let nextId = 1;
  const state = { refused: 0 };

  function write(zone: string, name: string, value: string): Stored {
    const r = { id: `${provider}-${nextId++}-${randomBytes(4).toString("hex")}`, zone, name: name.toLowerCase(), value };
    stored.push(r);
    writes.push({ name: r.name, value });
    if (opts.dns && opts.publish !== "none") opts.dns.addTxt(r.name, value, opts.publish && opts.publish !== "all" ? opts.publish : undefined);
    return r;
  }
  function remove(r: Stored): void {
    stored.splice(stored.indexOf(r), 1);
    deletes.push({ name: r.name, value: r.value });
    if (opts.dns && opts.publish !== "none") opts.dns.removeTxt(r.name, r.value, opts.publish && opts.publish !== "all" ? opts.publish : undefined);
  }
  const relative = (zone: string, name: string) => (name === zone ? "@" : name.slice(0, -(zone.length + 1)));
  const absolute = (zone: string, name: string) => (name === "@" ? zone : `${name.toLowerCase()}.${zone}`);

  const routes: Record<DnsHost, (req: http.IncomingMessage, url: URL, body: string) => Reply> = {
    cloudflare(req, url, body) {
      const cf = (status: number, result: unknown, errors: { code: number; message: string }[] = []) =>
        json(status, { success: errors.length === 0, errors, messages: [], result });
      if (!safeEqual(req.headers.authorization ?? "", `Bearer ${credentials.api_token}`)) {
        state.refused++;
        return cf(403, null, [{ code: 10000, message: "Authentication error" }]);
      }
      let m: RegExpMatchArray | null;
      if (req.method === "GET" && url.pathname === "/client/v4/zones") {
        const name = url.searchParams.get("name") ?? "";
        const list = zones.filter((z) => !name || z === name).map((z) => ({ id: zoneId(z), name: z, status: "active" }));
        return json(200, {
          success: true,
          errors: [],
          messages: [],
          result: list,
          result_info: { page: 1, per_page: 20, count: list.length, total_count: list.length },
        });
      }
      if ((m = url.pathname.match(/^\/client\/v4\/zones\/([^/]+)\/dns_records$/)) && req.method === "POST") {
        const zone = zones.find((z) => zoneId(z) === m![1]);
        if (!zone) return cf(404, null, [{ code: 7003, message: "Could not route to /zones/..., perhaps your object identifier is invalid?" }]);
        const r = JSON.parse(body) as { type: string; name: string; content: string; ttl?: number };
        if (r.type !== "TXT" || !r.name || !r.content) return cf(400, null, [{ code: 9000, message: "DNS name is invalid." }]);
        const name = r.name.toLowerCase().replace(/\.$/, "");
        if (name !== zone && !name.endsWith(`.${zone}`)) return cf(400, null, [{ code: 9005, message: "Content for TXT record is invalid." }]);
        const s = write(zone, name, unquote(r.content));
        return cf(200, { id: s.id, type: "TXT", name: s.name, content: r.content, ttl: r.ttl ?? 1, proxied: false });
      }
      if ((m = url.pathname.match(/^\/client\/v4\/zones\/([^/]+)\/dns_records\/([^/]+)$/)) && req.method === "DELETE") {
        const s = stored.find((r) => zoneId(r.zone) === m![1] && r.id === m![2]);
        if (!s) return cf(404, null, [{ code: 81044, message: "Record does not exist." }]);
        remove(s);
        return cf(200, { id: s.id });
      }
      return cf(404, null, [{ code: 7000, message: "No route for that URI" }]);
    },

    digitalocean(req, url, body) {
      if (!safeEqual(req.headers.authorization ?? "", `Bearer ${credentials.token}`)) {
        state.refused++;
        return json(401, { id: "Unauthorized", message: "Unable to authenticate you" });
      }
      const notFound = json(404, { id: "not_found", message: "The resource you were accessing could not be found." });
      const m = url.pathname.match(/^\/v2\/domains\/([^/]+)(\/records(?:\/([^/]+))?)?$/);
      const zone = m && zones.find((z) => z === m[1].toLowerCase());
      if (!m || !zone) return notFound;
      if (!m[2] && req.method === "GET") return json(200, { domain: { name: zone, ttl: 1800, zone_file: "" } });
      if (m[2] && !m[3] && req.method === "POST") {
        const r = JSON.parse(body) as { type: string; name: string; data: string; ttl?: number };
        if (r.type !== "TXT" || !r.name || !r.data) return json(422, { id: "unprocessable_entity", message: "Name can't be blank" });
        if (r.ttl !== undefined && r.ttl < 30) return json(422, { id: "unprocessable_entity", message: "TTL must be at least 30" });
        const s = write(zone, absolute(zone, r.name), r.data);
        return json(201, {
          domain_record: {
            id: Number(s.id.split("-")[1]),
            type: "TXT",
            name: r.name,
            data: r.data,
            priority: null,
            port: null,
            ttl: r.ttl ?? 1800,
            weight: null,
            flags: null,
            tag: null,
          },
        });
      }
      if (m[3] && req.method === "DELETE") {
        const s = stored.find((r) => r.zone === zone && r.id.split("-")[1] === m[3]);
        if (!s) return notFound;
        remove(s);
        return { status: 204 };
      }
      return notFound;
    },

    godaddy(req, url, body) {
      if (!safeEqual(req.headers.authorization ?? "", `sso-key ${credentials.key}:${credentials.secret}`)) {
        state.refused++;
        return json(401, { code: "UNABLE_TO_AUTHENTICATE", message: "Unable to authenticate" });
      }
      const m = url.pathname.match(/^\/v1\/domains\/([^/]+)(\/records(?:\/([^/]+)\/([^/]+))?)?$/);
      const zone = m && zones.find((z) => z === m[1].toLowerCase());
      if (!m || !zone) return json(404, { code: "NOT_FOUND", message: "Domain not found" });
      if (!m[2] && req.method === "GET") return json(200, { domain: zone, status: "ACTIVE" });
      if (m[2] && !m[3] && req.method === "PATCH") {
        const list = JSON.parse(body) as { type: string; name: string; data: string; ttl?: number }[];
        if (!Array.isArray(list) || list.some((r) => r.type !== "TXT" || !r.name || !r.data || (r.ttl !== undefined && r.ttl < 600))) {
          return json(422, { code: "INVALID_BODY", message: "Request body doesn't fulfill schema" });
        }
        for (const r of list) write(zone, absolute(zone, r.name), r.data);
        return { status: 200 };
      }
      if (m[3] === "TXT" && m[4]) {
        const name = absolute(zone, decodeURIComponent(m[4]));
        const here = stored.filter((r) => r.zone === zone && r.name === name);
        if (req.method === "GET")
          return json(
            200,
            here.map((r) => ({ data: r.value, name: relative(zone, r.name), ttl: 600, type: "TXT" })),
          );
        if (req.method === "PUT") {
          const keep = (JSON.parse(body) as { data: string }[]).map((r) => r.data);
          for (const r of here) if (!keep.includes(r.value)) remove(r);
          for (const v of keep) if (!here.some((r) => r.value === v)) write(zone, name, v);
          return { status: 200 };
        }
        if (req.method === "DELETE") {
          if (!here.length) return json(404, { code: "NOT_FOUND", message: "Record not found" });
          for (const r of here) remove(r);
          return { status: 204 };
        }
      }
      return json(404, { code: "NOT_FOUND", message: "Not found" });
    },

    route53(req, url, body) {
      const refusal = sigV4Refusal(req, url, body, credentials);
      if (refusal) {
        state.refused++;
        return xml(
          403,
          `<ErrorResponse xmlns="https://route53.amazonaws.com/doc/2013-04-01/"><Error><Type>Sender</Type><Code>${refusal.code}</Code><Message>${refusal.message}</Message></Error><RequestId>${randomBytes(8).toString("hex")}</RequestId></ErrorResponse>`,
        );
      }
      const err = (status: number, code: string, message: string) =>
        xml(
          status,
          `<ErrorResponse xmlns="https://route53.amazonaws.com/doc/2013-04-01/"><Error><Type>Sender</Type><Code>${code}</Code><Message>${message}</Message></Error><RequestId>r</RequestId></ErrorResponse>`,
        );
      if (req.method === "GET" && url.pathname === "/2013-04-01/hostedzonesbyname") {
        const from = (url.searchParams.get("dnsname") ?? "").toLowerCase().replace(/\.$/, "");
        // hosted zones in the API's order (labels reversed), starting at dnsname
        const key = (z: string) => z.split(".").reverse().join(".");
        const list = [...zones].sort((a, b) => (key(a) < key(b) ? -1 : 1)).filter((z) => !from || key(z) >= key(from));
        const items = list.slice(0, Number(url.searchParams.get("maxitems") ?? 100));
        return xml(
          200,
          `<ListHostedZonesByNameResponse xmlns="https://route53.amazonaws.com/doc/2013-04-01/"><HostedZones>${items
            .map(
              (z) =>
                `<HostedZone><Id>/hostedzone/${zoneId(z)}</Id><Name>${z}.</Name><CallerReference>ref</CallerReference><Config><PrivateZone>false</PrivateZone></Config><ResourceRecordSetCount>2</ResourceRecordSetCount></HostedZone>`,
            )
            .join(
              "",
            )}</HostedZones><DNSName>${from}</DNSName><IsTruncated>${items.length < list.length}</IsTruncated><MaxItems>${items.length}</MaxItems></ListHostedZonesByNameResponse>`,
        );
      }
      const m = url.pathname.match(/^\/2013-04-01\/hostedzone\/([^/]+)\/rrset\/?$/);
      if (m && req.method === "GET") {
        // ListResourceRecordSets: the TXT sets from (name, type) on, in the API's order; our zones hold TXT only
        const zone = zones.find((z) => zoneId(z) === m[1]);
        if (!zone) return err(404, "NoSuchHostedZone", `No hosted zone found with ID: ${m[1]}`);
        const from = (url.searchParams.get("name") ?? "").toLowerCase().replace(/\.$/, "");
        const key = (n: string) => n.split(".").reverse().join(".");
        const names = [...new Set(stored.filter((r) => r.zone === zone).map((r) => r.name))]
          .sort((a, b) => (key(a) < key(b) ? -1 : 1))
          .filter((n) => !from || key(n) >= key(from));
        const max = Number(url.searchParams.get("maxitems") ?? 100);
        const sets = names.slice(0, max).map(
          (n) =>
            `<ResourceRecordSet><Name>${n}.</Name><Type>TXT</Type><TTL>60</TTL><ResourceRecords>${stored
              .filter((r) => r.zone === zone && r.name === n)
              .map((r) => `<ResourceRecord><Value>&quot;${r.value}&quot;</Value></ResourceRecord>`)
              .join("")}</ResourceRecords></ResourceRecordSet>`,
        );
        return xml(
          200,
          `<ListResourceRecordSetsResponse xmlns="https://route53.amazonaws.com/doc/2013-04-01/"><ResourceRecordSets>${sets.join("")}</ResourceRecordSets><IsTruncated>${names.length > max}</IsTruncated><MaxItems>${max}</MaxItems></ListResourceRecordSetsResponse>`,
        );
      }
      if (m && req.method === "POST") {
        const zone = zones.find((z) => zoneId(z) === m[1]);
        if (!zone) return err(404, "NoSuchHostedZone", `No hosted zone found with ID: ${m[1]}`);
        const changes = [...body.matchAll(/<Change>([\s\S]*?)<\/Change>/g)].map((c) => ({
          action: /<Action>(\w+)<\/Action>/.exec(c[1])?.[1],
          name: /<Name>([^<]+)<\/Name>/.exec(c[1])?.[1].toLowerCase().replace(/\.$/, "") ?? "",
          type: /<Type>(\w+)<\/Type>/.exec(c[1])?.[1],
          values: [...c[1].matchAll(/<Value>([^<]*)<\/Value>/g)].map((v) => v[1].replaceAll("&quot;", '"').replaceAll("&amp;", "&")),
        }));
        if (!changes.length) return err(400, "InvalidInput", "Invalid XML ; ChangeBatch has no changes");
        for (const c of changes) {
          if (c.type !== "TXT" || (c.name !== zone && !c.name.endsWith(`.${zone}`)))
            return err(400, "InvalidChangeBatch", `RRSet with DNS name ${c.name}. is not permitted in zone ${zone}.`);
          if (c.values.some((v) => !/^".*"$/.test(v)))
            return err(
              400,
              "InvalidChangeBatch",
              "Invalid Resource Record: 'FATAL problem: InvalidCharacterString (Value should be enclosed in quotation marks)'",
            );
          const here = stored.filter((r) => r.zone === zone && r.name === c.name);
          const values = c.values.map(unquote);
          if (c.action === "DELETE") {
            if (here.length !== values.length || here.some((r) => !values.includes(r.value))) {
              return err(
                400,
                "InvalidChangeBatch",
                `[Tried to delete resource record set [name='${c.name}.', type='TXT'] but the values provided do not match the current values]`,
              );
            }
            for (const r of here) remove(r);
          } else if (c.action === "UPSERT" || c.action === "CREATE") {
            // the set becomes exactly `values`: what changed is recorded as writes and deletes
            for (const r of here) if (!values.includes(r.value)) remove(r);
            for (const v of values) if (!here.some((r) => r.value === v)) write(zone, c.name, v);
          } else return err(400, "InvalidInput", `Invalid action ${c.action}`);
        }
        return xml(
          200,
          `<ChangeResourceRecordSetsResponse xmlns="https://route53.amazonaws.com/doc/2013-04-01/"><ChangeInfo><Id>/change/C${randomBytes(6).toString("hex").toUpperCase()}</Id><Status>PENDING</Status><SubmittedAt>${new Date().toISOString()}</SubmittedAt></ChangeInfo></ChangeResourceRecordSetsResponse>`,
        );
      }
      return err(404, "NotFound", "Not found");
    },
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      let reply: Reply;
      try {
        reply = routes[provider](req, new URL(req.url ?? "/", "http://x"), Buffer.concat(chunks).toString("utf8"));
      } catch (e) {
        reply = json(400, { message: `bad request: ${(e as Error).message}` });
      }
      res.writeHead(reply.status, reply.type && reply.body !== undefined ? { "content-type": reply.type } : {}).end(reply.body);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    provider,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${API_PREFIX[provider]}`,
    credentials,
    writes,
    deletes,
    get refused() {
      return state.refused;
    },
    records: () => stored.map((r) => ({ name: r.name, value: r.value })),
    seed(name, value) {
      const n = name.toLowerCase();
      const zone = zones.filter((z) => n === z || n.endsWith(`.${z}`)).sort((x, y) => y.length - x.length)[0];
      if (!zone) throw new Error(`${name} is in none of this account's zones`);
      write(zone, n, value);
      writes.pop();
    },
    close() {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** The version path each API's base URL ends with (DNS_API_*_URL defaults carry it too). */
export const API_PREFIX: Record<DnsHost, string> = {
  cloudflare: "/client/v4",
  digitalocean: "/v2",
  godaddy: "/v1",
  route53: "/2013-04-01",
};

const zoneId = (zone: string) => createHash("sha256").update(zone).digest("hex").slice(0, 14).toUpperCase();

const hmac = (key: Buffer | string, data: string) => createHmac("sha256", key).update(data).digest();
const sha256 = (data: string) => createHash("sha256").update(data).digest("hex");
const rfc3986 = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/**
 * Why AWS would refuse this request's Signature Version 4 (undefined: it is valid), computed
 * from the secret as AWS does: canonical request, string to sign, the derived signing key.
 */
function sigV4Refusal(req: http.IncomingMessage, url: URL, body: string, creds: Record<string, string>): { code: string; message: string } | undefined {
  const auth = req.headers.authorization ?? "";
  const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(auth);
  if (!m) return { code: "MissingAuthenticationToken", message: "Missing Authentication Token" };
  const [, keyId, date, region, service, signedHeaders, signature] = m;
  if (keyId !== creds.access_key_id) return { code: "InvalidClientTokenId", message: "The security token included in the request is invalid." };
  if (service !== "route53" || region !== "us-east-1")
    return {
      code: "SignatureDoesNotMatch",
      message: `Credential should be scoped to a valid region and service route53, not ${region}/${service}`,
    };
  const amzDate = String(req.headers["x-amz-date"] ?? "");
  if (!amzDate.startsWith(date))
    return {
      code: "SignatureDoesNotMatch",
      message: "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP",
    };
  const names = signedHeaders.split(";");
  if (!names.includes("host") || !names.includes("x-amz-date")) return { code: "SignatureDoesNotMatch", message: "host and x-amz-date must be signed" };
  const path = url.pathname
    .split("/")
    .map((p) => rfc3986(p))
    .join("/");
  const query = [...url.searchParams]
    .map(([k, v]) => `${rfc3986(k)}=${rfc3986(v)}`)
    .sort()
    .join("&");
  const headers = names
    .map(
      (n) =>
        `${n}:${String(req.headers[n] ?? "")
          .trim()
          .replace(/\s+/g, " ")}\n`,
    )
    .join("");
  const canonical = [req.method, path, query, headers, signedHeaders, sha256(body)].join("\n");
  const scope = `${date}/${region}/${service}/aws4_request`;
  const toSign = ["AWS4-HMAC-SHA256", amzDate, scope, sha256(canonical)].join("\n");
  const key = hmac(hmac(hmac(hmac(`AWS4${creds.secret_access_key}`, date), region), service), "aws4_request");
  const expected = createHmac("sha256", key).update(toSign).digest("hex");
  if (!safeEqual(expected, signature)) {
    return {
      code: "SignatureDoesNotMatch",
      message: "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.",
    };
  }
  return undefined;
}
