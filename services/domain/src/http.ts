/**
 * The HTTP file check: `http://{domain}/.well-known/icv-verify.txt`, then the same over https://,
 * holding `icv-verify={token}` (surrounding whitespace ignored). Each URL gets 5 s in all and at
 * most 2 redirects, each to the same domain (the domain or a subdomain of it) on the check's own
 * ports; at most 4 KB of the body is read (a longer file fails and says so). The host's address
 * is resolved through DNS_RESOLVERS, every address must pass the SSRF rules of the platform's
 * outbound client, and the connection goes to the address that was checked (no DNS rebinding):
 * a redirect hop is checked again, so a redirect to a private address is refused even when an
 * exception (allowAddress) let the first hop through. As ACME's http-01 does, the certificate of
 * an https:// URL is not validated: the file's content is the evidence, and http:// (tried
 * first) has none either.
 */
import { timingSafeEqual } from "node:crypto";
import { createOutboundClient, OutboundError, type OutboundClient, type ResolvedAddress } from "@icv/platform";
import { addressesOf, type ResolverOptions } from "./dns-wire.ts";
import { preview, type CheckOutcome, type FailReason, type Observation } from "./outcome.ts";
import { allowListOf, type TargetRules } from "./targets.ts";

export const HTTP_FILE_PATH = "/.well-known/icv-verify.txt";
export const MAX_FILE_BYTES = 4096;
const MAX_REDIRECTS = 2;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export interface HttpCheckOptions extends ResolverOptions, TargetRules {
  httpPort: number;
  httpsPort: number;
  /** Per URL, redirects included (default 5 s). (timeoutMs is the DNS queries'.) */
  fetchTimeoutMs?: number;
  now?: () => Date;
}

export interface HttpChecker {
  check(domain: string, expected: string): Promise<CheckOutcome>;
  close(): void;
}

export function httpChecker(opts: HttpCheckOptions): HttpChecker {
  const client: OutboundClient = createOutboundClient({
    allowPrivate: opts.allowPrivate,
    allowAddress: allowListOf(opts.allowAddresses),
    timeoutMs: opts.fetchTimeoutMs ?? 5_000,
    maxBodyBytes: MAX_FILE_BYTES,
    drainLimit: 0,
    rejectUnauthorized: false,
    // a fresh connection per fetch: a pooled one could still go to the address an earlier check resolved
    keepAlive: false,
    resolver: async (host): Promise<ResolvedAddress[]> =>
      (await addressesOf(host, opts)).map((address) => ({ address, family: address.includes(":") ? 6 : 4 })),
  });
  const now = opts.now ?? (() => new Date());

  const portOf = (scheme: "http" | "https") => (scheme === "http" ? opts.httpPort : opts.httpsPort);
  const urlOf = (scheme: "http" | "https", domain: string) => {
    const port = portOf(scheme);
    const dflt = scheme === "http" ? 80 : 443;
    return new URL(`${scheme}://${domain}${port === dflt ? "" : `:${port}`}${HTTP_FILE_PATH}`);
  };

  /** Why a redirect target is refused, or undefined when it may be followed. */
  function redirectRefusal(next: URL, domain: string): string | undefined {
    if (next.protocol !== "http:" && next.protocol !== "https:") return `redirect to a ${next.protocol.slice(0, -1)} URL refused`;
    const host = next.hostname.toLowerCase().replace(/\.$/, "");
    if (host !== domain && !host.endsWith(`.${domain}`)) return `redirect to another domain (${host}) refused`;
    const scheme = next.protocol === "http:" ? "http" : "https";
    const port = next.port ? Number(next.port) : scheme === "http" ? 80 : 443;
    if (port !== portOf(scheme)) return `redirect to port ${port} refused (only ${opts.httpPort} for http and ${opts.httpsPort} for https)`;
    if (next.username || next.password) return "redirect to a URL with credentials refused";
    return undefined;
  }

  /** Fetches one scheme's URL, following allowed redirects; appends what each hop saw. */
  async function fetchFile(start: URL, domain: string, expected: string, observations: Observation[]): Promise<boolean> {
    const deadline = Date.now() + (opts.fetchTimeoutMs ?? 5_000);
    let url = start;
    for (let hop = 0; ; hop++) {
      const source = url.toString();
      let res;
      try {
        res = await client.request(url, {
          headers: { accept: "text/plain", "user-agent": "icv-domain-check/1" },
          timeoutMs: Math.max(1, deadline - Date.now()),
        });
      } catch (e) {
        if (!(e instanceof OutboundError)) throw e;
        observations.push({ source, found: [], error: e.message, matched: false });
        return false;
      }
      const status = `HTTP ${res.status}`;
      const location = typeof res.headers.location === "string" ? res.headers.location : undefined;
      if (REDIRECTS.has(res.status) && location) {
        let next: URL | undefined;
        try {
          next = new URL(location, url);
        } catch {
          next = undefined;
        }
        const why = !next
          ? `redirect to an invalid URL refused`
          : hop >= MAX_REDIRECTS
            ? `more than ${MAX_REDIRECTS} redirects`
            : redirectRefusal(next, domain);
        observations.push({ source, found: [`${status} redirect to ${preview(location)}`], error: why ?? "", matched: false });
        if (why || !next) return false;
        url = next;
        continue;
      }
      if (res.truncated) {
        observations.push({
          source,
          found: [status, preview(res.body.slice(0, 100))],
          error: `the file is larger than ${MAX_FILE_BYTES} bytes`,
          matched: false,
        });
        return false;
      }
      const body = res.body.trim();
      const matched = res.status === 200 && safeEqual(body, expected);
      observations.push({ source, found: [status, preview(body)], error: "", matched });
      return matched;
    }
  }

  return {
    async check(domain, expected) {
      const observations: Observation[] = [];
      for (const scheme of ["http", "https"] as const) {
        const url = urlOf(scheme, domain);
        if (await fetchFile(url, domain, expected, observations)) {
          const at = observations[observations.length - 1].source;
          return { passed: true, summary: `Found ${JSON.stringify(expected)} at ${at}.`, observations, checkedAt: now() };
        }
      }
      const why = observations.map((o) => `${o.source}: ${o.error || o.found.join(" ")}`);
      return {
        passed: false,
        reason: httpReason(observations),
        summary: `${JSON.stringify(expected)} was not found at ${HTTP_FILE_PATH} of ${domain}: ${why.join("; ")}.`,
        observations,
        checkedAt: now(),
      };
    },
    close: () => client.close(),
  };
}

/** No URL answered: unreachable; a file served with another body: record_mismatch; else (404, refused redirects): record_missing. */
function httpReason(observations: Observation[]): FailReason {
  if (observations.every((o) => !o.found.length)) return "unreachable";
  return observations.some((o) => o.found[0] === "HTTP 200") ? "record_mismatch" : "record_missing";
}

const safeEqual = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};
