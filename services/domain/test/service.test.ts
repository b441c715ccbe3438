// The domain service over its real RPC transport (mutual TLS, caller allow-list), configured by
// environment as in production: DNS_RESOLVERS and DNS_AUTHORITATIVE_PORT at a real DNS server on
// loopback, DOMAIN_HTTP_PORT/DOMAIN_HTTPS_PORT at a real web site, DNS_API_*_URL at local servers
// speaking each DNS host's API. Every log line is kept: no credential may appear in any.
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { fromConnectError } from "@icv/platform";
import { startDnsHostApi, type DnsHost, type DnsHostApi } from "../../../test/support/dns-hosts.ts";
import { startDnsZones, type DnsZones } from "../../../test/support/dns-server.ts";
import { startDomainSite, type DomainSite } from "../../../test/support/domain-site.ts";
import { domainCheckEnv } from "../../../test/support/domain-env.ts";
import { startTestDomainService, type TestDomainService } from "./support/domain-service.ts";

const TOKEN = "icv-verify=c2VydmljZS10ZXN0LXRva2VuLWZvci10aGUtZG9tYWluLXJwYw";
const scope = { tenantId: "ten_A", environment: Environment.TEST };
const HOSTS: DnsHost[] = ["cloudflare", "digitalocean", "godaddy", "route53"];
let dns: DnsZones;
let site: DomainSite;
let apis: Record<DnsHost, DnsHostApi>;
let svc: TestDomainService;

beforeAll(async () => {
  [dns, site] = await Promise.all([startDnsZones({ addresses: ["127.0.0.1", "127.0.0.2"] }), startDomainSite()]);
  dns.zone("example.test", ["127.0.0.1", "127.0.0.2"], { A: ["127.0.0.1"] });
  dns.set("example.test", { NS: ["kim.ns.cloudflare.com", "lara.ns.cloudflare.com"] }, "127.0.0.1");
  dns.set("kim.ns.cloudflare.com", { A: ["127.0.0.1"] });
  dns.set("lara.ns.cloudflare.com", { A: ["127.0.0.2"] });
  const list = await Promise.all(HOSTS.map((h) => startDnsHostApi(h, { dns, zones: ["example.test"] })));
  apis = Object.fromEntries(list.map((a) => [a.provider, a])) as Record<DnsHost, DnsHostApi>;
  svc = await startTestDomainService(
    // the name servers are on 127.0.0.1 and 127.0.0.2 (http.test.ts proves the narrower rules)
    { ...domainCheckEnv({ dns, site, apis: list, propagationMs: 300 }), ALLOW_PRIVATE_TARGETS: "true" },
  );
});
afterAll(async () => {
  await svc?.close();
  await Promise.all([dns?.close(), site?.close(), ...Object.values(apis ?? {}).map((a) => a.close())]);
});

async function errorOf(p: Promise<unknown>): Promise<ConnectError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e, "expected the call to fail").toBeInstanceOf(ConnectError);
  return e as ConnectError;
}

describe("DomainService RPCs", () => {
  it("CheckDns answers the per-server observations and the time of the check", async () => {
    dns.addTxt("_icv-challenge.example.test", TOKEN, "127.0.0.1");
    try {
      const { result } = await svc.client.checkDns({ scope, domain: "example.test", expectedValue: TOKEN });
      expect(result?.passed).toBe(false);
      expect(result?.observations.map((o) => [o.source, o.found, o.matched])).toEqual([
        [`kim.ns.cloudflare.com (127.0.0.1:${dns.port})`, [TOKEN], true],
        [`lara.ns.cloudflare.com (127.0.0.2:${dns.port})`, [], false],
      ]);
      expect(result?.summary).toContain("lara.ns.cloudflare.com");
      expect(Math.abs(timestampDate(result!.checkedAt!).getTime() - Date.now())).toBeLessThan(5_000);
      dns.addTxt("_icv-challenge.example.test", TOKEN, "127.0.0.2");
      expect((await svc.client.checkDns({ scope, domain: "example.test", expectedValue: TOKEN })).result?.passed).toBe(true);
    } finally {
      dns.remove("_icv-challenge.example.test");
    }
  });

  it("CheckHttp fetches the file on the configured ports", async () => {
    site.serve("example.test", "/.well-known/icv-verify.txt", { body: TOKEN }, "https");
    const { result } = await svc.client.checkHttp({ scope, domain: "example.test", expectedValue: TOKEN });
    expect(result?.passed, result?.summary).toBe(true);
    expect(result?.observations.map((o) => o.source)).toEqual([
      `http://example.test:${site.httpPort}/.well-known/icv-verify.txt`,
      `https://example.test:${site.httpsPort}/.well-known/icv-verify.txt`,
    ]);
  });

  it("DetectProvider names the DNS host from the NS names", async () => {
    const r = await svc.client.detectProvider({ scope, domain: "example.test" });
    expect(r).toMatchObject({
      detected: "cloudflare",
      name: "Cloudflare",
      nameServers: ["kim.ns.cloudflare.com", "lara.ns.cloudflare.com"],
    });
    expect(await svc.client.detectProvider({ scope, domain: "nowhere.test" })).toMatchObject({
      detected: "unknown",
      name: "Unknown",
      nameServers: [],
    });
  });

  it.each(HOSTS)("CheckWithProvider through %s writes, checks and removes the record", async (host) => {
    const api = apis[host];
    const before = api.writes.length;
    const r = await svc.client.checkWithProvider({
      scope,
      domain: "example.test",
      expectedValue: TOKEN,
      provider: host,
      credentials: api.credentials,
    });
    expect(r.result?.passed, r.result?.summary).toBe(true);
    expect(r.recordRemoved).toBe(true);
    expect(api.writes.slice(before)).toEqual([{ name: "_icv-challenge.example.test", value: TOKEN }]);
    expect(api.records()).toEqual([]);
  });

  it("every check RPC applies the owner's _icv policy: another issuer is policy_refused (DNS, HTTP, through the provider)", async () => {
    dns.addTxt("_icv.example.test", "v=icv1; issuer=https://another-verifier.example");
    dns.addTxt("_icv-challenge.example.test", TOKEN);
    site.serve("example.test", "/.well-known/icv-verify.txt", { body: TOKEN });
    try {
      const viaDns = (await svc.client.checkDns({ scope, domain: "example.test", expectedValue: TOKEN })).result!;
      const viaHttp = (await svc.client.checkHttp({ scope, domain: "example.test", expectedValue: TOKEN })).result!;
      dns.removeTxt("_icv-challenge.example.test", TOKEN);
      const api = apis.cloudflare;
      const viaApi = await svc.client.checkWithProvider({
        scope,
        domain: "example.test",
        expectedValue: TOKEN,
        provider: "cloudflare",
        credentials: api.credentials,
      });
      for (const r of [viaDns, viaHttp, viaApi.result!]) {
        expect(r).toMatchObject({ passed: false, reason: "policy_refused" });
        expect(r.observations.some((o) => o.source.startsWith("_icv.example.test at ") && !o.matched)).toBe(true);
      }
      expect(viaApi.recordRemoved).toBe(true);
    } finally {
      dns.remove("_icv.example.test");
      dns.removeTxt("_icv-challenge.example.test", TOKEN);
    }
    expect((await svc.client.checkDns({ scope, domain: "example.test", expectedValue: TOKEN })).result).toMatchObject({
      passed: false,
      reason: "record_missing",
    });
  });

  it("refuses bad input: unknown provider, missing credential, a domain that is not normalized, an IP, no scope", async () => {
    const code = async (p: Promise<unknown>) => fromConnectError(await errorOf(p)).code;
    expect(await code(svc.client.checkWithProvider({ scope, domain: "example.test", expectedValue: TOKEN, provider: "bind", credentials: {} }))).toBe(
      "validation_error",
    );
    const e = await errorOf(
      svc.client.checkWithProvider({
        scope,
        domain: "example.test",
        expectedValue: TOKEN,
        provider: "godaddy",
        credentials: { key: "k-123456789" },
      }),
    );
    expect(e.message).toContain("secret is missing");
    expect(await code(svc.client.checkDns({ scope, domain: "Example.TEST.", expectedValue: TOKEN }))).toBe("validation_error");
    expect(await code(svc.client.checkHttp({ scope, domain: "127.0.0.1", expectedValue: TOKEN }))).toBe("validation_error");
    expect(await code(svc.client.checkDns({ scope, domain: "example.test", expectedValue: "a b" }))).toBe("validation_error");
    expect(await code(svc.client.checkDns({ domain: "example.test", expectedValue: TOKEN }))).toBe("unauthorized");
  });

  it("only verification may call: the gateway and the session service get PERMISSION_DENIED on every RPC", async () => {
    const writesBefore = apis.cloudflare.writes.length;
    for (const name of ["gateway", "session"] as const) {
      const other = await svc.as(name);
      const calls = [
        other.checkDns({ scope, domain: "example.test", expectedValue: TOKEN }),
        other.checkHttp({ scope, domain: "example.test", expectedValue: TOKEN }),
        other.checkWithProvider({
          scope,
          domain: "example.test",
          expectedValue: TOKEN,
          provider: "cloudflare",
          credentials: apis.cloudflare.credentials,
        }),
        other.detectProvider({ scope, domain: "example.test" }),
      ];
      for (const c of calls) expect((await errorOf(c)).code).toBe(Code.PermissionDenied);
    }
    expect(apis.cloudflare.writes.length).toBe(writesBefore); // a refused call wrote nothing
  });

  it("no credential reaches any log line, whether the call passed, failed or was refused", async () => {
    // failures too: refused credentials, a DNS host that is down, an API error
    for (const host of HOSTS) {
      const creds = apis[host].credentials;
      const wrong = Object.fromEntries(Object.entries(creds).map(([k, v]) => [k, `${v}-wrong`]));
      await svc.client.checkWithProvider({ scope, domain: "example.test", expectedValue: TOKEN, provider: host, credentials: wrong });
      await svc.client.checkWithProvider({ scope, domain: "other.test", expectedValue: TOKEN, provider: host, credentials: creds });
    }
    const denied = await svc.as("gateway");
    await errorOf(
      denied.checkWithProvider({
        scope,
        domain: "example.test",
        expectedValue: TOKEN,
        provider: "route53",
        credentials: apis.route53.credentials,
      }),
    );
    expect(svc.logs.length).toBeGreaterThan(0);
    const secrets = HOSTS.flatMap((h) => Object.values(apis[h].credentials));
    for (const line of svc.logs) for (const s of secrets) expect(line).not.toContain(s);
    // and none in a log line in a partial form either (the token's longest part)
    for (const line of svc.logs) expect(line).not.toContain(apis.cloudflare.credentials.api_token.slice(3, 23));
  });
});
