// The DNS host named by a domain's NS host names: real NS sets of the major hosts, and the
// look-up through a real DNS server on loopback.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDnsZones, type DnsZones } from "../../../test/support/dns-server.ts";
import { detectFromNameServers, detectProvider } from "../src/detect.ts";

describe("detectFromNameServers", () => {
  it.each([
    [["kim.ns.cloudflare.com", "lara.ns.cloudflare.com"], "cloudflare", "Cloudflare"],
    [["ns-1536.awsdns-00.co.uk.", "ns-0.awsdns-00.com.", "ns-1024.awsdns-00.org.", "ns-512.awsdns-00.net."], "route53", "Amazon Route 53"],
    [["ns-cloud-a1.googledomains.com", "ns-cloud-a2.googledomains.com"], "google-cloud", "Google Cloud DNS"],
    [["ns07.domaincontrol.com", "ns08.domaincontrol.com"], "godaddy", "GoDaddy"],
    [["dns1.registrar-servers.com", "dns2.registrar-servers.com"], "namecheap", "Namecheap"],
    [["ns1.digitalocean.com", "ns2.digitalocean.com", "ns3.digitalocean.com"], "digitalocean", "DigitalOcean"],
    [["ns1-05.azure-dns.com", "ns2-05.azure-dns.net", "ns3-05.azure-dns.org", "ns4-05.azure-dns.info"], "azure", "Azure DNS"],
    [["hydrogen.ns.hetzner.com", "oxygen.ns.hetzner.com", "helium.ns.hetzner.de"], "hetzner", "Hetzner"],
    [["dns10.ovh.net", "ns10.ovh.net"], "ovh", "OVHcloud"],
    [["NS1.EXAMPLE-HOSTING.TEST", "ns2.example-hosting.test"], "unknown", "Unknown"],
    [[], "unknown", "Unknown"],
  ])("%j → %s", (ns, detected, name) => {
    expect(detectFromNameServers(ns)).toEqual({ detected, name });
  });

  it("a look-alike name does not match (cloudflare.com.evil.test, notdomaincontrol.com.test)", () => {
    expect(detectFromNameServers(["kim.ns.cloudflare.com.evil.test", "ns1.notdomaincontrol.com.test"]).detected).toBe("unknown");
  });

  it("a mixed set names the host most of the names point at", () => {
    expect(detectFromNameServers(["kim.ns.cloudflare.com", "ns1.digitalocean.com", "ns2.digitalocean.com"]).detected).toBe("digitalocean");
  });
});

describe("detectProvider", () => {
  let dns: DnsZones;
  beforeAll(async () => {
    dns = await startDnsZones();
    dns.set("example.test", { NS: ["ns08.domaincontrol.com", "ns07.domaincontrol.com"] });
  });
  afterAll(() => dns?.close());
  const opts = () => ({ resolvers: [{ host: "127.0.0.1", port: dns.port }], timeoutMs: 500 });

  it("reads the NS set of the domain's zone (a subdomain: its parent's) through the resolvers", async () => {
    expect(await detectProvider("www.example.test", opts())).toEqual({
      detected: "godaddy",
      name: "GoDaddy",
      nameServers: ["ns07.domaincontrol.com", "ns08.domaincontrol.com"],
    });
  });

  it("answers unknown, with no name servers, for a domain without NS records", async () => {
    expect(await detectProvider("missing.test", opts())).toEqual({ detected: "unknown", name: "Unknown", nameServers: [] });
  });
});
