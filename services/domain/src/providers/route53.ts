/**
 * Amazon Route 53 (API 2013-04-01, an access key with route53:ListHostedZonesByName,
 * route53:ListResourceRecordSets and route53:ChangeResourceRecordSets), every request signed with
 * AWS Signature Version 4 (aws4): the hosted zone found by `GET /hostedzonesbyname?dnsname=`; a
 * TXT set in Route 53 is one record set per name, so the set at the name is read
 * (`GET /hostedzone/{id}/rrset?name=&type=TXT`) and ChangeResourceRecordSets UPSERTs it with our
 * value added, then with it taken out again (DELETE of exactly that set when ours was alone).
 */
import aws4 from "aws4";
import { callApi, ProviderError, zoneCandidates, type DnsHostDefinition } from "./provider.ts";

const TTL = 60;
const XMLNS = "https://route53.amazonaws.com/doc/2013-04-01/";
const CREDENTIAL_ERRORS = new Set([
  "InvalidClientTokenId",
  "SignatureDoesNotMatch",
  "AccessDenied",
  "IncompleteSignature",
  "MissingAuthenticationToken",
  "UnrecognizedClientException",
  "ExpiredToken",
]);

const tag = (xml: string, name: string) => new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml)?.[1];
const escapeXml = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/** A value as Route 53 holds it: a quoted character-string. */
const quote = (value: string) => `"${value.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
const unescapeXml = (s: string) =>
  s
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");

/** A ChangeBatch of one change of the TXT set at `name` to exactly `values` (quoted strings). */
function changeBatch(action: "UPSERT" | "DELETE", name: string, values: string[], ttl: number): string {
  const records = values.map((v) => `<ResourceRecord><Value>${escapeXml(v)}</Value></ResourceRecord>`).join("");
  return `<?xml version="1.0" encoding="UTF-8"?>
<ChangeResourceRecordSetsRequest xmlns="${XMLNS}"><ChangeBatch><Comment>icv domain check</Comment><Changes><Change><Action>${action}</Action><ResourceRecordSet><Name>${escapeXml(name)}.</Name><Type>TXT</Type><TTL>${ttl}</TTL><ResourceRecords>${records}</ResourceRecords></ResourceRecordSet></Change></Changes></ChangeBatch></ChangeResourceRecordSetsRequest>`;
}

export const route53: DnsHostDefinition = {
  key: "route53",
  name: "Amazon Route 53",
  credentials: ["access_key_id", "secret_access_key"],
  client(baseUrl, credentials) {
    const base = new URL(baseUrl);
    const keys = { accessKeyId: credentials.access_key_id, secretAccessKey: credentials.secret_access_key };

    async function call(method: string, path: string, body?: string): Promise<string> {
      const signed = aws4.sign(
        {
          host: base.host,
          path: `${base.pathname.replace(/\/$/, "")}${path}`,
          method,
          body,
          service: "route53",
          region: "us-east-1",
          headers: body ? { "content-type": "text/xml" } : {},
          extraHeadersToIgnore: { "content-length": true },
        } as aws4.Request,
        keys,
      );
      const headers = Object.fromEntries(
        Object.entries(signed.headers ?? {})
          .filter(([k]) => !/^(host|content-length)$/i.test(k))
          .map(([k, v]) => [k, String(v)]),
      );
      const res = await callApi("Route 53", `${base.protocol}//${base.host}${signed.path}`, { method, headers, body });
      if (res.status < 300) return res.text;
      const code = tag(res.text, "Code") ?? "";
      const why = `${tag(res.text, "Message") ?? `HTTP ${res.status}`}${code ? ` (${code})` : ""}`;
      if (res.status === 403 || CREDENTIAL_ERRORS.has(code))
        throw new ProviderError("credentials", `Route 53 refused the access key: HTTP ${res.status} ${why}`);
      throw new ProviderError("api", `Route 53 answered HTTP ${res.status}: ${why}`);
    }

    /** The TXT set at `name` now: its quoted values and TTL (none: an empty list). */
    async function currentSet(zoneId: string, name: string): Promise<{ values: string[]; ttl: number }> {
      const xml = await call("GET", `/hostedzone/${encodeURIComponent(zoneId)}/rrset?name=${encodeURIComponent(`${name}.`)}&type=TXT&maxitems=1`);
      const set = /<ResourceRecordSet>([\s\S]*?)<\/ResourceRecordSet>/.exec(xml)?.[1];
      // the listing starts at (name, TXT): the first set is another one when ours does not exist
      if (!set || (tag(set, "Name") ?? "").toLowerCase().replace(/\.$/, "") !== name || tag(set, "Type") !== "TXT") return { values: [], ttl: TTL };
      return { values: [...set.matchAll(/<Value>([^<]*)<\/Value>/g)].map((m) => unescapeXml(m[1])), ttl: Number(tag(set, "TTL") ?? TTL) };
    }
    const rrset = (zoneId: string) => `/hostedzone/${encodeURIComponent(zoneId)}/rrset/`;

    return {
      async write(domain, name, value) {
        for (const zone of zoneCandidates(domain)) {
          const xml = await call("GET", `/hostedzonesbyname?dnsname=${encodeURIComponent(zone)}&maxitems=1`);
          const first = /<HostedZone>([\s\S]*?)<\/HostedZone>/.exec(xml)?.[1];
          if (!first || (tag(first, "Name") ?? "").toLowerCase().replace(/\.$/, "") !== zone) continue;
          const id = (tag(first, "Id") ?? "").replace(/^\/hostedzone\//, "");
          const current = await currentSet(id, name);
          if (!current.values.includes(quote(value)))
            await call("POST", rrset(id), changeBatch("UPSERT", name, [...current.values, quote(value)], current.ttl));
          return { zone: id, name, value };
        }
        throw new ProviderError("zone", `the AWS account holds no Route 53 hosted zone for ${domain}`);
      },
      async remove(record) {
        const current = await currentSet(record.zone, record.name);
        const others = current.values.filter((v) => v !== quote(record.value));
        if (others.length === current.values.length) return; // already gone
        if (others.length) await call("POST", rrset(record.zone), changeBatch("UPSERT", record.name, others, current.ttl));
        else await call("POST", rrset(record.zone), changeBatch("DELETE", record.name, current.values, current.ttl));
      },
    };
  },
};
