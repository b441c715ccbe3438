import { hostService, type Config, type Logger, type RunningService } from "@icv/platform";
import { domainCallers } from "./callers.ts";
import { detectProvider } from "./detect.ts";
import { checkDns } from "./dns.ts";
import { checkPolicy, withPolicy } from "./policy.ts";
import { resolversFrom } from "./dns-wire.ts";
import { httpChecker } from "./http.ts";
import { checkWithProvider } from "./provider-check.ts";
import { domainRoutes } from "./rpc/domain.ts";

/**
 * Starts the domain service: DNS, HTTP and DNS-host checks for the verification service. It keeps
 * no state (no database): the verification service owns the verification, its token and its count.
 */
export async function startDomainService(config: Config, logger: Logger, opts: { allowAddresses?: string[] } = {}): Promise<RunningService> {
  const resolverOpts = { resolvers: resolversFrom(config.DNS_RESOLVERS), timeoutMs: config.DNS_QUERY_TIMEOUT_MS };
  const rules = { allowPrivate: config.ALLOW_PRIVATE_TARGETS, allowAddresses: opts.allowAddresses };
  const dnsOpts = { ...resolverOpts, ...rules, authoritativePort: config.DNS_AUTHORITATIVE_PORT, perServer: config.DNS_MAX_INFLIGHT_PER_SERVER };
  const http = httpChecker({
    ...resolverOpts,
    httpPort: config.DOMAIN_HTTP_PORT,
    httpsPort: config.DOMAIN_HTTPS_PORT,
    ...rules,
  });
  const dns = (domain: string, expected: string) => checkDns(domain, expected, dnsOpts);
  const baseUrls = {
    cloudflare: config.DNS_API_CLOUDFLARE_URL,
    digitalocean: config.DNS_API_DIGITALOCEAN_URL,
    godaddy: config.DNS_API_GODADDY_URL,
    route53: config.DNS_API_ROUTE53_URL,
  };
  const svc = await hostService(config, "domain", {
    rpcName: "icv.domain.v1.DomainService",
    logger: logger.child({ service: "domain" }),
    callers: domainCallers,
    routes: domainRoutes({
      dns,
      http: (domain, expected) => http.check(domain, expected),
      withProvider: (req) => checkWithProvider(req, { checkDns: dns, baseUrls, propagationMs: config.DNS_PROPAGATION_TIMEOUT_MS }),
      detect: (domain) => detectProvider(domain, resolverOpts),
      // the policy is asked beside the check, not after it
      async policy(domain, tenantId, outcome) {
        const [o, p] = await Promise.all([outcome, checkPolicy(domain, { issuer: config.issuer, tenantId }, dnsOpts)]);
        return withPolicy(o, p, config.issuer);
      },
    }),
  });
  return {
    url: svc.url,
    async close() {
      await svc.close();
      http.close();
    },
  };
}
