// The environment that points the domain service at the local stand-ins: the DNS server
// (./dns-server.ts) as resolver and authoritative servers, the web site (./domain-site.ts) on the
// HTTP check's ports, and each DNS host API (./dns-hosts.ts) as that host's base URL. For a stack
// on loopback, add ALLOW_PRIVATE_TARGETS=true (the site's address is 127.0.0.1).
import type { DnsHostApi } from "./dns-hosts.ts";
import type { DnsZones } from "./dns-server.ts";
import type { DomainSite } from "./domain-site.ts";

export function domainCheckEnv(opts: { dns?: DnsZones; site?: DomainSite; apis?: DnsHostApi[]; propagationMs?: number }): Record<string, string> {
  return {
    ...(opts.dns ? { DNS_RESOLVERS: opts.dns.resolver, DNS_AUTHORITATIVE_PORT: String(opts.dns.port), DNS_QUERY_TIMEOUT_MS: "1000" } : {}),
    ...(opts.site ? { DOMAIN_HTTP_PORT: String(opts.site.httpPort), DOMAIN_HTTPS_PORT: String(opts.site.httpsPort) } : {}),
    ...Object.fromEntries((opts.apis ?? []).map((a) => [`DNS_API_${a.provider.toUpperCase()}_URL`, a.url])),
    ...(opts.propagationMs !== undefined ? { DNS_PROPAGATION_TIMEOUT_MS: String(opts.propagationMs) } : {}),
  };
}
