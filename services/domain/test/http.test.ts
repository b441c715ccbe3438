// The HTTP file check against a real web site on loopback (http and https listeners), the
// domain's address served by a real DNS server (DNS_RESOLVERS). The site is on 127.0.0.1, so the
// checker allows exactly that address (allowAddresses, narrower than ALLOW_PRIVATE_TARGETS):
// every other private address stays refused, which is what the SSRF tests prove.
import net, { type AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startDnsZones, type DnsZones } from "../../../test/support/dns-server.ts";
import { startDomainSite, type DomainSite } from "../../../test/support/domain-site.ts";
import { HTTP_FILE_PATH, httpChecker, type HttpChecker } from "../src/http.ts";

const TOKEN = "icv-verify=aHR0cC1jaGVjay10b2tlbi1mb3ItdGhlLXRlc3Qtb25seS0x";
let dns: DnsZones;
let site: DomainSite;
let checker: HttpChecker;

beforeAll(async () => {
  [dns, site] = await Promise.all([startDnsZones(), startDomainSite()]);
  dns.set("example.test", { A: ["127.0.0.1"] });
  dns.set("www.example.test", { CNAME: "example.test" });
  dns.set("internal.example.test", { A: ["127.0.0.2"] });
  dns.set("metadata.example.test", { A: ["169.254.169.254"] });
  dns.set("other.test", { A: ["127.0.0.1"] });
  checker = httpChecker({
    resolvers: [{ host: "127.0.0.1", port: dns.port }],
    timeoutMs: 1_000,
    httpPort: site.httpPort,
    httpsPort: site.httpsPort,
    allowPrivate: false,
    allowAddresses: ["127.0.0.1"],
  });
});
afterAll(async () => {
  checker?.close();
  await Promise.all([dns?.close(), site?.close()]);
});
beforeEach(() => site.clear());

const httpUrl = (host: string) => `http://${host}:${site.httpPort}${HTTP_FILE_PATH}`;
const httpsUrl = (host: string) => `https://${host}:${site.httpsPort}${HTTP_FILE_PATH}`;

describe("checkHttp", () => {
  it("passes on the http:// file, trimmed", async () => {
    site.serve("example.test", HTTP_FILE_PATH, { body: `${TOKEN}\n` });
    const r = await checker.check("example.test", TOKEN);
    expect(r.passed, r.summary).toBe(true);
    expect(r.observations).toEqual([{ source: httpUrl("example.test"), found: ["HTTP 200", TOKEN], error: "", matched: true }]);
    expect(site.requests).toEqual([{ scheme: "http", host: "example.test", path: HTTP_FILE_PATH }]);
  });

  it("falls back to https:// (self-signed certificate accepted) when http:// lacks the file", async () => {
    site.serve("example.test", HTTP_FILE_PATH, { body: TOKEN }, "https");
    const r = await checker.check("example.test", TOKEN);
    expect(r.passed, r.summary).toBe(true);
    expect(r.observations.map((o) => [o.source, o.found[0], o.matched])).toEqual([
      [httpUrl("example.test"), "HTTP 404", false],
      [httpsUrl("example.test"), "HTTP 200", true],
    ]);
  });

  it("fails with what it found when the content is wrong", async () => {
    site.serve("example.test", HTTP_FILE_PATH, { body: "icv-verify=someone-else" });
    const r = await checker.check("example.test", TOKEN);
    expect(r.passed).toBe(false);
    expect(r.summary).toContain("HTTP 200 icv-verify=someone-else");
    expect(r.observations.map((o) => o.found)).toEqual([
      ["HTTP 200", "icv-verify=someone-else"],
      ["HTTP 200", "icv-verify=someone-else"],
    ]);
  });

  it("follows a redirect within the domain (to www, then to https)", async () => {
    site.serve("example.test", HTTP_FILE_PATH, { status: 301, location: httpUrl("www.example.test") }, "http");
    site.serve("www.example.test", HTTP_FILE_PATH, { status: 308, location: httpsUrl("www.example.test") }, "http");
    site.serve("www.example.test", HTTP_FILE_PATH, { body: TOKEN }, "https");
    const r = await checker.check("example.test", TOKEN);
    expect(r.passed, r.summary).toBe(true);
    expect(r.observations).toHaveLength(3);
    expect(r.observations[2]).toMatchObject({ source: httpsUrl("www.example.test"), matched: true });
  });

  it("refuses a third redirect", async () => {
    // example.test → www.example.test → example.test → (a third: refused)
    site.serve("example.test", HTTP_FILE_PATH, { location: httpUrl("www.example.test") });
    site.serve("www.example.test", HTTP_FILE_PATH, { location: httpUrl("example.test") });
    const r = await checker.check("example.test", TOKEN);
    expect(r.passed).toBe(false);
    expect(r.observations.filter((o) => o.error === "more than 2 redirects")).toHaveLength(2);
  });

  it("refuses a redirect to another domain, even one that holds the right file", async () => {
    site.serve("example.test", HTTP_FILE_PATH, { location: httpUrl("other.test") });
    site.serve("other.test", HTTP_FILE_PATH, { body: TOKEN });
    const r = await checker.check("example.test", TOKEN);
    expect(r.passed).toBe(false);
    expect(r.observations[0].error).toBe("redirect to another domain (other.test) refused");
    expect(r.summary).toContain("redirect to another domain (other.test) refused");
    expect(site.requests.some((q) => q.host === "other.test")).toBe(false);
  });

  it("refuses a redirect to a private address within the domain, although the first hop's address was allowed", async () => {
    site.serve("example.test", HTTP_FILE_PATH, { location: httpUrl("internal.example.test") });
    const r = await checker.check("example.test", TOKEN);
    expect(r.passed).toBe(false);
    expect(r.observations[1]).toMatchObject({ source: httpUrl("internal.example.test"), matched: false });
    expect(r.observations[1].error).toBe("refused: 127.0.0.2 is a loopback address (internal.example.test resolves to it)");
  });

  it("refuses the cloud metadata address and a domain resolving to a private address", async () => {
    site.serve("example.test", HTTP_FILE_PATH, { location: httpUrl("metadata.example.test") });
    const meta = await checker.check("example.test", TOKEN);
    expect(meta.observations[1].error).toContain("169.254.169.254 is a cloud metadata address");
    const direct = await checker.check("internal.example.test", TOKEN);
    expect(direct.passed).toBe(false);
    expect(direct.observations.map((o) => o.error)).toEqual([
      "refused: 127.0.0.2 is a loopback address (internal.example.test resolves to it)",
      "refused: 127.0.0.2 is a loopback address (internal.example.test resolves to it)",
    ]);
  });

  it("refuses a redirect to another port", async () => {
    site.serve("example.test", HTTP_FILE_PATH, { location: `http://example.test:6379${HTTP_FILE_PATH}` }, "http");
    const r = await checker.check("example.test", TOKEN);
    expect(r.observations[0].error).toContain("redirect to port 6379 refused");
  });

  it("fails a file over 4 KB and says so, even when it starts with the token", async () => {
    site.serve("example.test", HTTP_FILE_PATH, { body: `${TOKEN}\n${"x".repeat(5000)}` });
    const r = await checker.check("example.test", TOKEN);
    expect(r.passed).toBe(false);
    expect(r.observations[0].error).toBe("the file is larger than 4096 bytes");
    expect(r.summary).toContain("larger than 4096 bytes");
  });

  it("a file of exactly 4096 bytes is read whole", async () => {
    site.serve("example.test", HTTP_FILE_PATH, { body: `${TOKEN}${" ".repeat(4096 - TOKEN.length)}` });
    const r = await checker.check("example.test", TOKEN);
    expect(r.passed, r.summary).toBe(true);
  });

  it("gives each URL 5 s (here 300 ms) and says it timed out when the site never answers", async () => {
    const held = new Set<net.Socket>();
    const silent = net.createServer((c) => void held.add(c));
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
    const port = (silent.address() as AddressInfo).port;
    const slow = httpChecker({
      resolvers: [{ host: "127.0.0.1", port: dns.port }],
      timeoutMs: 1_000,
      fetchTimeoutMs: 300,
      httpPort: port,
      httpsPort: port,
      allowPrivate: false,
      allowAddresses: ["127.0.0.1"],
    });
    try {
      const started = Date.now();
      const r = await slow.check("example.test", TOKEN);
      expect(r.passed).toBe(false);
      expect(r.observations.map((o) => o.error)).toEqual(["timed out after 300 ms", "timed out after 300 ms"]);
      expect(Date.now() - started).toBeLessThan(3_000);
    } finally {
      slow.close();
      for (const c of held) c.destroy();
      await new Promise<void>((r) => silent.close(() => r()));
    }
  });

  it("connects anew for each check: after the domain moves to another address, the next check sees the new site", async () => {
    const moved = await startDomainSite({ address: "127.0.0.3", ports: { http: site.httpPort, https: site.httpsPort } });
    const two = httpChecker({
      resolvers: [{ host: "127.0.0.1", port: dns.port }],
      timeoutMs: 1_000,
      httpPort: site.httpPort,
      httpsPort: site.httpsPort,
      allowPrivate: false,
      allowAddresses: ["127.0.0.1", "127.0.0.3"],
    });
    try {
      site.serve("example.test", HTTP_FILE_PATH, { body: "icv-verify=the-old-server" });
      moved.serve("example.test", HTTP_FILE_PATH, { body: TOKEN });
      expect((await two.check("example.test", TOKEN)).passed).toBe(false);
      dns.set("example.test", { A: ["127.0.0.3"] });
      const r = await two.check("example.test", TOKEN);
      expect(r.passed, r.summary).toBe(true);
      expect(moved.requests).toHaveLength(1);
    } finally {
      dns.set("example.test", { A: ["127.0.0.1"] });
      two.close();
      await moved.close();
    }
  });

  it("reports a domain without an address", async () => {
    const r = await checker.check("missing.test", TOKEN);
    expect(r.passed).toBe(false);
    expect(r.observations[0].error).toBe("DNS lookup of missing.test found no address");
  });
});
