// Channel auto against local servers speaking each DNS host's real API (test/support/dns-hosts.ts),
// the written record published in a real DNS server on loopback: the production clients write the
// record, the DNS check finds it on every authoritative server, and the record is removed again,
// also when the check fails.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startDnsHostApi, type DnsHost, type DnsHostApi } from "../../../test/support/dns-hosts.ts";
import { startDnsZones, type DnsZones } from "../../../test/support/dns-server.ts";
import { checkDns } from "../src/dns.ts";
import { checkWithProvider, type ProviderCheckDeps } from "../src/provider-check.ts";

const TOKEN = "icv-verify=cHJvdmlkZXItY2hlY2stdG9rZW4tZm9yLXRoZS10ZXN0cy0x";
const HOSTS: DnsHost[] = ["cloudflare", "digitalocean", "godaddy", "route53"];
const NAME = "_icv-challenge.shop.example.test";
let dns: DnsZones;

beforeAll(async () => {
  dns = await startDnsZones({ addresses: ["127.0.0.1", "127.0.0.2"] });
  dns.zone("example.test", ["127.0.0.1", "127.0.0.2"]);
});
afterAll(() => dns?.close());
beforeEach(() => dns.remove(NAME));

const deps = (api: DnsHostApi, propagationMs = 2_000): ProviderCheckDeps => ({
  checkDns: (domain, expected) =>
    checkDns(domain, expected, {
      resolvers: [{ host: "127.0.0.1", port: dns.port }],
      authoritativePort: dns.port,
      timeoutMs: 500,
      allowPrivate: true,
    }),
  baseUrls: { [api.provider]: api.url },
  propagationMs,
  pollMs: 100,
});

async function withApi<T>(host: DnsHost, opts: { publish?: string }, fn: (api: DnsHostApi) => Promise<T>): Promise<T> {
  const api = await startDnsHostApi(host, { dns, zones: ["example.test", "other.test"], ...opts });
  try {
    return await fn(api);
  } finally {
    await api.close();
  }
}

describe.each(HOSTS)("channel auto through %s", (host) => {
  it("writes the TXT record through the API, finds it on every authoritative server, then removes it", async () => {
    await withApi(host, {}, async (api) => {
      const { outcome, recordRemoved } = await checkWithProvider(
        { domain: "shop.example.test", expected: TOKEN, provider: host, credentials: api.credentials },
        deps(api),
      );
      expect(outcome.passed, outcome.summary).toBe(true);
      expect(recordRemoved).toBe(true);
      expect(api.writes).toEqual([{ name: NAME, value: TOKEN }]);
      expect(api.deletes).toEqual([{ name: NAME, value: TOKEN }]);
      expect(api.records()).toEqual([]);
      expect(dns.txt(NAME, "127.0.0.1")).toEqual([]);
      expect(outcome.summary).toContain("on 2 of 2 authoritative servers of example.test");
      expect(outcome.summary).toContain("removed again");
      expect(outcome.observations[0]).toEqual({
        source: `${host} API`,
        found: [`wrote TXT ${NAME} ${JSON.stringify(TOKEN)}`],
        error: "",
        matched: true,
      });
      expect(outcome.observations.at(-1)).toEqual({ source: `${host} API`, found: [`removed TXT ${NAME}`], error: "", matched: true });
    });
  });

  it("removes the record also when the check fails (one server never sees it)", async () => {
    await withApi(host, { publish: "127.0.0.1" }, async (api) => {
      const started = Date.now();
      const { outcome, recordRemoved } = await checkWithProvider(
        { domain: "shop.example.test", expected: TOKEN, provider: host, credentials: api.credentials },
        deps(api, 400),
      );
      expect(outcome.passed).toBe(false);
      expect(outcome.summary).toContain(`ns2.example.test (127.0.0.2:${dns.port})`);
      expect(recordRemoved).toBe(true);
      expect(api.deletes).toEqual([{ name: NAME, value: TOKEN }]);
      expect(api.records()).toEqual([]);
      expect(dns.txt(NAME, "127.0.0.1")).toEqual([]);
      // it waited for propagation (bounded), asking again
      expect(Date.now() - started).toBeGreaterThanOrEqual(300);
      expect(dns.queries.filter((q) => q.name === NAME && q.server === "127.0.0.2").length).toBeGreaterThan(1);
    });
  });

  it("reports credentials the API refuses, writes nothing and says nothing was removed", async () => {
    await withApi(host, {}, async (api) => {
      const wrong = Object.fromEntries(Object.entries(api.credentials).map(([k, v]) => [k, k === "access_key_id" ? v : `${v.slice(0, -3)}xyz`]));
      const { outcome, recordRemoved } = await checkWithProvider(
        { domain: "shop.example.test", expected: TOKEN, provider: host, credentials: wrong },
        deps(api),
      );
      expect(outcome.passed).toBe(false);
      expect(recordRemoved).toBe(false);
      expect(outcome.summary).toMatch(/refused the (API token|token|API key|access key): HTTP 40[13]/);
      expect(outcome.observations).toHaveLength(1);
      expect(outcome.observations[0].source).toBe(`${host} API`);
      expect(api.refused).toBeGreaterThan(0);
      expect(api.writes).toEqual([]);
      for (const v of Object.values(wrong)) if (v.length > 8) expect(JSON.stringify(outcome)).not.toContain(v);
    });
  });

  it("says when the account holds no zone for the domain", async () => {
    await withApi(host, {}, async (api) => {
      const { outcome } = await checkWithProvider({ domain: "elsewhere.test", expected: TOKEN, provider: host, credentials: api.credentials }, deps(api));
      expect(outcome.passed).toBe(false);
      expect(outcome.summary).toMatch(/holds no (zone|domain|Route 53 hosted zone) for elsewhere\.test/);
      expect(api.writes).toEqual([]);
    });
  });
});

describe("channel auto: Route 53 signatures", () => {
  it("a request signed with another secret is refused by the signature check (SignatureDoesNotMatch)", async () => {
    await withApi("route53", {}, async (api) => {
      const { outcome } = await checkWithProvider(
        {
          domain: "shop.example.test",
          expected: TOKEN,
          provider: "route53",
          credentials: { ...api.credentials, secret_access_key: "x".repeat(40) },
        },
        deps(api),
      );
      expect(outcome.summary).toContain("SignatureDoesNotMatch");
    });
  });
});

describe.each(HOSTS)("channel auto through %s keeps the other TXT values at the name", (host) => {
  it("another tenant's value there before is there after, and was never touched", async () => {
    await withApi(host, {}, async (api) => {
      const other = "icv-verify=another-tenant-verifying-the-same-domain";
      api.seed(NAME, other);
      const { outcome, recordRemoved } = await checkWithProvider(
        { domain: "shop.example.test", expected: TOKEN, provider: host, credentials: api.credentials },
        deps(api),
      );
      expect(outcome.passed, outcome.summary).toBe(true);
      expect(recordRemoved).toBe(true);
      expect(api.records()).toEqual([{ name: NAME, value: other }]);
      expect(api.writes).toEqual([{ name: NAME, value: TOKEN }]);
      expect(api.deletes).toEqual([{ name: NAME, value: TOKEN }]);
      expect(dns.txt(NAME)).toEqual([other]);
    });
  });
});

describe("channel auto: a host that echoes the credential in its error text", () => {
  it("never shows the credential to the user", async () => {
    const token = "cf-echoed-secret-token-0123456789";
    const echo = http.createServer((req, res) => res.writeHead(500, { "content-type": "text/plain" }).end(`internal error for ${req.headers.authorization}`));
    await new Promise<void>((r) => echo.listen(0, "127.0.0.1", r));
    try {
      const url = `http://127.0.0.1:${(echo.address() as AddressInfo).port}/client/v4`;
      const { outcome } = await checkWithProvider(
        { domain: "shop.example.test", expected: TOKEN, provider: "cloudflare", credentials: { api_token: token } },
        { checkDns: () => Promise.reject(new Error("not reached")), baseUrls: { cloudflare: url }, propagationMs: 0 },
      );
      expect(outcome.passed).toBe(false);
      expect(outcome.summary).toContain("Cloudflare answered HTTP 500: internal error for Bearer [redacted]");
      expect(JSON.stringify(outcome)).not.toContain(token);
    } finally {
      await new Promise<void>((r) => echo.close(() => r()));
    }
  });
});
