// The owner's `_icv` policy record (issue 27) against real authoritative servers on loopback, its
// parser, the failure reasons of the DNS check, and the bound on questions in flight to one name
// server.
import dgram from "node:dgram";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startDnsZones, type DnsZones } from "../../../test/support/dns-server.ts";
import { checkDns, type DnsCheckOptions } from "../src/dns.ts";
import { query } from "../src/dns-wire.ts";
import { checkPolicy, parsePolicy, withPolicy } from "../src/policy.ts";

let dns: DnsZones;
let opts: DnsCheckOptions;
const TOKEN = "icv-verify=cG9saWN5dGVzdHRva2VucG9saWN5dGVzdHRva2VucG9saWN5";
const US = { issuer: "https://verify.example.com", tenantId: "ten_01JAAAAAAAAAAAAAAAAAAAAAAA" };

beforeAll(async () => {
  dns = await startDnsZones({ addresses: ["127.0.0.1", "127.0.0.2"] });
  opts = {
    resolvers: [{ host: "127.0.0.1", port: dns.port }],
    authoritativePort: dns.port,
    timeoutMs: 300,
    allowPrivate: false,
    allowAddresses: ["127.0.0.0/29"],
  };
});
afterAll(() => dns?.close());
beforeEach(() => {
  for (const a of dns.addresses) dns.behave(a, "answer");
  dns.remove("_icv.example.test");
  dns.remove("_icv-challenge.example.test");
  dns.zone("example.test", ["127.0.0.1", "127.0.0.2"]);
});

describe("parsePolicy", () => {
  it("reads issuer and tenant; ignores records that are not v=icv1; calls the rest malformed", () => {
    expect(parsePolicy("v=icv1; issuer=https://verify.example.com")).toEqual({ issuer: "https://verify.example.com" });
    expect(parsePolicy(" V=ICV1 ;issuer=https://a.example ; tenant=ten_abc123 ")).toEqual({ issuer: "https://a.example", tenant: "ten_abc123" });
    expect(parsePolicy("v=spf1 -all")).toBeUndefined();
    expect(parsePolicy("v=icv10; issuer=x")).toBeUndefined();
    for (const bad of [
      "v=icv1",
      "v=icv1; issuer",
      "v=icv1; issuer=",
      "v=icv1; issuer=a; issuer=b",
      "v=icv1; issuer=a; color=red",
      "v=icv1; issuer=a; tenant=bob",
    ]) {
      expect(parsePolicy(bad), bad).toHaveProperty("malformed");
    }
  });
});

describe("checkPolicy", () => {
  it("no record: none, and nothing shown", async () => {
    expect(await checkPolicy("example.test", US, opts)).toEqual({ verdict: "none", observations: [] });
  });

  it("this issuer (any tenant, or this tenant) allows; another issuer or another tenant refuses; asked of every server", async () => {
    dns.addTxt("_icv.example.test", `v=icv1; issuer=${US.issuer}/`);
    const any = await checkPolicy("example.test", US, opts);
    expect(any.verdict).toBe("allowed");
    expect(any.observations.map((o) => o.source)).toEqual([
      `_icv.example.test at ns1.example.test (127.0.0.1:${dns.port})`,
      `_icv.example.test at ns2.example.test (127.0.0.2:${dns.port})`,
    ]);
    expect(dns.queries.filter((q) => q.name === "_icv.example.test" && !q.recursionDesired).map((q) => q.server)).toEqual(
      expect.arrayContaining(["127.0.0.1", "127.0.0.2"]),
    );

    dns.remove("_icv.example.test");
    dns.addTxt("_icv.example.test", `v=icv1; issuer=${US.issuer}; tenant=ten_other`);
    expect((await checkPolicy("example.test", US, opts)).verdict).toBe("refused");
    dns.addTxt("_icv.example.test", `v=icv1; issuer=${US.issuer}; tenant=${US.tenantId}`);
    expect((await checkPolicy("example.test", US, opts)).verdict).toBe("allowed");

    dns.remove("_icv.example.test");
    dns.addTxt("_icv.example.test", "v=icv1; issuer=https://elsewhere.example");
    expect((await checkPolicy("example.test", US, opts)).verdict).toBe("refused");
  });

  it("a record on one server only still counts (the owner's word on any authoritative server)", async () => {
    dns.addTxt("_icv.example.test", "v=icv1; issuer=https://elsewhere.example", "127.0.0.2");
    const p = await checkPolicy("example.test", US, opts);
    expect(p.verdict).toBe("refused");
    expect(p.observations).toHaveLength(1);
  });

  it("a malformed record alone changes nothing and is shown with why", async () => {
    dns.addTxt("_icv.example.test", "v=icv1; tenant=ten_x");
    const p = await checkPolicy("example.test", US, opts);
    expect(p.verdict).toBe("none");
    expect(p.observations[0]).toMatchObject({ found: ["v=icv1; tenant=ten_x"], matched: false, error: expect.stringMatching(/malformed.*no issuer/) });
  });

  it("withPolicy: a refusal fails a passing check with policy_refused and keeps what both saw", async () => {
    dns.addTxt("_icv-challenge.example.test", TOKEN);
    dns.addTxt("_icv.example.test", "v=icv1; issuer=https://elsewhere.example");
    const checked = await checkDns("example.test", TOKEN, opts);
    expect(checked.passed).toBe(true);
    const r = withPolicy(checked, await checkPolicy("example.test", US, opts), US.issuer);
    expect(r).toMatchObject({ passed: false, reason: "policy_refused" });
    expect(r.observations).toHaveLength(4);
  });
});

describe("the DNS check's reasons", () => {
  it("record_missing, record_mismatch, unreachable", async () => {
    expect(await checkDns("example.test", TOKEN, opts)).toMatchObject({ passed: false, reason: "record_missing" });
    dns.addTxt("_icv-challenge.example.test", "icv-verify=old");
    expect(await checkDns("example.test", TOKEN, opts)).toMatchObject({ passed: false, reason: "record_mismatch" });
    dns.addTxt("_icv-challenge.example.test", TOKEN);
    // one of two servers silent: the other one decides
    dns.behave("127.0.0.2", "silent");
    expect((await checkDns("example.test", TOKEN, opts)).passed).toBe(true);
    // both silent (the first is also the resolver): unreachable
    dns.behave("127.0.0.1", "silent");
    expect(await checkDns("example.test", TOKEN, opts)).toMatchObject({ passed: false, reason: "unreachable" });
  });
});

describe("questions in flight to one name server", () => {
  it("are bounded: with perServer 2, a server that never answers sees 2 at a time", async () => {
    const sock = dgram.createSocket("udp4");
    const seen: number[] = [];
    sock.on("message", () => seen.push(Date.now()));
    await new Promise<void>((r) => sock.bind(0, "127.0.0.1", r));
    const server = { host: "127.0.0.1", port: (sock.address() as AddressInfo).port };
    try {
      const start = Date.now();
      const answers = await Promise.all(
        Array.from({ length: 6 }, (_, i) => query(server, `q${i}.example.test`, "TXT", { timeoutMs: 300, recursive: false, perServer: 2 })),
      );
      expect(answers.every((a) => !a.ok)).toBe(true);
      expect(seen).toHaveLength(6);
      // three waves of two: the first two at once, the last two only after two timeouts
      expect(seen.filter((t) => t - start < 250)).toHaveLength(2);
      expect(seen[5] - start).toBeGreaterThanOrEqual(550);
    } finally {
      sock.close();
    }
  });
});
