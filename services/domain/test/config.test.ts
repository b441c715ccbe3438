// The domain checks' configuration: DNS_RESOLVERS and the ports are validated at start with a
// message naming the variable, and the resolvers list is read as host:port pairs.
import { describe, expect, it } from "vitest";
import { parseConfig } from "@icv/platform";
import { resolversFrom } from "../src/dns-wire.ts";

describe("domain configuration", () => {
  it("reads DNS_RESOLVERS as host:port pairs (IPv6 in brackets) and defaults the rest", () => {
    const c = parseConfig({ DNS_RESOLVERS: "1.1.1.1:53, [2606:4700:4700::1111]:53,resolver.internal:5353" });
    expect(resolversFrom(c.DNS_RESOLVERS)).toEqual([
      { host: "1.1.1.1", port: 53 },
      { host: "2606:4700:4700::1111", port: 53 },
      { host: "resolver.internal", port: 5353 },
    ]);
    expect([c.DNS_AUTHORITATIVE_PORT, c.DOMAIN_HTTP_PORT, c.DOMAIN_HTTPS_PORT, c.DNS_QUERY_TIMEOUT_MS]).toEqual([53, 80, 443, 2000]);
    expect(c.DNS_API_ROUTE53_URL).toBe("https://route53.amazonaws.com/2013-04-01");
  });

  it("without DNS_RESOLVERS, the system's resolvers", () => {
    const list = resolversFrom(parseConfig({}).DNS_RESOLVERS);
    expect(list.length).toBeGreaterThan(0);
    for (const r of list) expect(r.port).toBeGreaterThan(0);
  });

  it.each([
    [{ DNS_RESOLVERS: "1.1.1.1" }, "DNS_RESOLVERS"],
    [{ DNS_RESOLVERS: "1.1.1.1:53,::1:53" }, "DNS_RESOLVERS"],
    [{ DNS_RESOLVERS: "1.1.1.1:99999" }, "DNS_RESOLVERS"],
    [{ DNS_AUTHORITATIVE_PORT: "0" }, "DNS_AUTHORITATIVE_PORT"],
    [{ DOMAIN_HTTPS_PORT: "https" }, "DOMAIN_HTTPS_PORT"],
    [{ DNS_API_CLOUDFLARE_URL: "not a url" }, "DNS_API_CLOUDFLARE_URL"],
  ])("refuses %j naming %s", (env, name) => {
    expect(() => parseConfig(env)).toThrow(new RegExp(`^invalid configuration: ${name} `));
  });
});
