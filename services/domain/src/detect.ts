/**
 * Which company hosts a domain's DNS, read from its NS host names (the zone found through
 * DNS_RESOLVERS, as the DNS check finds it). `unknown` when no name matches; when the names point
 * at several hosts, the one most of them name.
 */
import { zoneNameServers, type ResolverOptions } from "./dns-wire.ts";

interface HostRule {
  key: string;
  name: string;
  /** Matches an NS host name (lower case, no trailing dot). */
  ns: RegExp;
}

export const DNS_HOSTS: readonly HostRule[] = [
  { key: "cloudflare", name: "Cloudflare", ns: /\.ns\.cloudflare\.com$/ },
  { key: "route53", name: "Amazon Route 53", ns: /(^|\.)awsdns-\d+\.(com|net|org|co\.uk)$/ },
  { key: "google-cloud", name: "Google Cloud DNS", ns: /^ns-cloud-[a-z]\d+\.googledomains\.com$/ },
  { key: "godaddy", name: "GoDaddy", ns: /\.domaincontrol\.com$/ },
  { key: "namecheap", name: "Namecheap", ns: /\.(registrar-servers|namecheaphosting)\.com$/ },
  { key: "digitalocean", name: "DigitalOcean", ns: /^ns\d\.digitalocean\.com$/ },
  { key: "azure", name: "Azure DNS", ns: /\.azure-dns\.(com|net|org|info)$/ },
  { key: "hetzner", name: "Hetzner", ns: /(\.ns\.hetzner\.(com|de)|\.your-server\.de|\.first-ns\.de|\.second-ns\.(de|com))$/ },
  { key: "ovh", name: "OVHcloud", ns: /\.ovh\.(net|ca)$/ },
  { key: "gandi", name: "Gandi", ns: /\.gandi\.net$/ },
  { key: "linode", name: "Linode (Akamai)", ns: /^ns\d\.linode\.com$/ },
  { key: "vercel", name: "Vercel", ns: /\.vercel-dns\.com$/ },
  { key: "dnsimple", name: "DNSimple", ns: /\.dnsimple(-edge)?\.(com|net|org|info)$/ },
  { key: "porkbun", name: "Porkbun", ns: /\.porkbun\.com$/ },
  { key: "namecom", name: "Name.com", ns: /^ns\d[a-z0-9]*\.name\.com$/ },
  { key: "hostinger", name: "Hostinger", ns: /\.dns-parking\.com$/ },
  { key: "ns1", name: "NS1", ns: /\.nsone\.net$/ },
];

export interface Detected {
  detected: string;
  name: string;
}

export const UNKNOWN: Detected = { detected: "unknown", name: "Unknown" };

/** The DNS host named by most of these NS host names, or unknown. */
export function detectFromNameServers(nameServers: readonly string[]): Detected {
  const votes = new Map<HostRule, number>();
  for (const n of nameServers) {
    const host = n.toLowerCase().replace(/\.$/, "");
    const rule = DNS_HOSTS.find((r) => r.ns.test(host));
    if (rule) votes.set(rule, (votes.get(rule) ?? 0) + 1);
  }
  const best = [...votes].sort((a, b) => b[1] - a[1])[0]?.[0];
  return best ? { detected: best.key, name: best.name } : UNKNOWN;
}

/** The domain's NS host names (the closest enclosing zone's) and the host they name. */
export async function detectProvider(domain: string, opts: ResolverOptions): Promise<Detected & { nameServers: string[] }> {
  const found = await zoneNameServers(domain, opts);
  if ("error" in found) return { ...UNKNOWN, nameServers: [] };
  return { ...detectFromNameServers(found.nameServers), nameServers: found.nameServers };
}
