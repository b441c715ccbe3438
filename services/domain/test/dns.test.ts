// The DNS check against real authoritative servers on loopback (test/support/dns-server.ts):
// two name servers on 127.0.0.1 and 127.0.0.2, the first also the resolver.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startDnsZones, type DnsZones } from "../../../test/support/dns-server.ts";
import { checkDns, type DnsCheckOptions } from "../src/dns.ts";

let dns: DnsZones;
let opts: DnsCheckOptions;
const TOKEN = "icv-verify=Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5d2FsZG8";

beforeAll(async () => {
  dns = await startDnsZones({ addresses: ["127.0.0.1", "127.0.0.2", "127.0.0.3"] });
  // the servers are on loopback: exactly those addresses are let through, every other private one stays refused
  opts = {
    resolvers: [{ host: "127.0.0.1", port: dns.port }],
    authoritativePort: dns.port,
    timeoutMs: 400,
    allowPrivate: false,
    allowAddresses: ["127.0.0.0/29"],
  };
});
afterAll(() => dns?.close());
beforeEach(() => {
  for (const a of dns.addresses) dns.behave(a, "answer");
  for (const n of ["_icv-challenge.example.test", "_icv-challenge.www.example.test", "_icv-challenge.delegated.test", "target.validations.test"]) dns.remove(n);
  dns.zone("example.test", ["127.0.0.1", "127.0.0.2"]);
});

describe("checkDns", () => {
  it("passes when every authoritative server holds the record, and names them", async () => {
    dns.addTxt("_icv-challenge.example.test", TOKEN);
    dns.addTxt("_icv-challenge.example.test", "some-other-verification=1");
    const r = await checkDns("example.test", TOKEN, opts);
    expect(r.passed, r.summary).toBe(true);
    expect(r.summary).toContain("on 2 of 2 authoritative servers of example.test");
    expect(r.observations.map((o) => o.source)).toEqual([`ns1.example.test (127.0.0.1:${dns.port})`, `ns2.example.test (127.0.0.2:${dns.port})`]);
    expect(r.observations.every((o) => o.matched && o.found.includes(TOKEN))).toBe(true);
    // asked directly, without recursion, on each server's own address
    const direct = dns.queries.filter((q) => q.name === "_icv-challenge.example.test" && q.type === "TXT");
    expect(direct.map((q) => [q.server, q.recursionDesired])).toEqual(
      expect.arrayContaining([
        ["127.0.0.1", false],
        ["127.0.0.2", false],
      ]),
    );
  });

  it("fails when one of two servers lacks the record, and names that server", async () => {
    dns.addTxt("_icv-challenge.example.test", TOKEN, "127.0.0.1");
    const r = await checkDns("example.test", TOKEN, opts);
    expect(r.passed).toBe(false);
    expect(r.summary).toContain(`ns2.example.test (127.0.0.2:${dns.port})`);
    expect(r.summary).not.toContain("ns1.example.test");
    const [one, two] = r.observations;
    expect(one).toMatchObject({ matched: true, found: [TOKEN] });
    expect(two).toMatchObject({ matched: false, found: [] });
    expect(two.error).toMatch(/^NXDOMAIN/);
  });

  it("says what it found when the value is wrong", async () => {
    dns.addTxt("_icv-challenge.example.test", "icv-verify=not-the-token");
    const r = await checkDns("example.test", TOKEN, opts);
    expect(r.passed).toBe(false);
    expect(r.summary).toContain('has "icv-verify=not-the-token"');
    expect(r.observations.map((o) => o.found)).toEqual([["icv-verify=not-the-token"], ["icv-verify=not-the-token"]]);
  });

  it("reports NXDOMAIN per server when the record is absent", async () => {
    const r = await checkDns("example.test", TOKEN, opts);
    expect(r.passed).toBe(false);
    expect(r.observations).toHaveLength(2);
    for (const o of r.observations) expect(o.error).toBe("NXDOMAIN: _icv-challenge.example.test does not exist");
    expect(r.summary).toContain("answered NXDOMAIN");
  });

  it("fails when the domain has no name servers at all", async () => {
    const r = await checkDns("nowhere.test", TOKEN, opts);
    expect(r.passed).toBe(false);
    expect(r.summary).toContain("Could not find the authoritative name servers");
  });

  it("a server that times out is reported and does not decide; the one that answers does", async () => {
    dns.addTxt("_icv-challenge.example.test", TOKEN, "127.0.0.1");
    dns.behave("127.0.0.2", "silent");
    const r = await checkDns("example.test", TOKEN, opts);
    expect(r.passed, r.summary).toBe(true);
    expect(r.observations[1]).toMatchObject({
      source: `ns2.example.test (127.0.0.2:${dns.port})`,
      error: "timeout after 400 ms",
      matched: false,
    });
    expect(r.summary).toContain("1 did not answer");
  });

  it("REFUSED is reported per server; when no server answers the check fails", async () => {
    dns.addTxt("_icv-challenge.example.test", TOKEN);
    dns.behave("127.0.0.2", "REFUSED");
    dns.set("ns1.example.test", { A: ["127.0.0.2"] });
    try {
      const r = await checkDns("example.test", TOKEN, opts);
      expect(r.passed).toBe(false);
      expect(r.observations.map((o) => o.error)).toEqual(["REFUSED"]);
      expect(r.summary).toContain("None of the 1 authoritative servers");
    } finally {
      dns.set("ns1.example.test", { A: ["127.0.0.1"] });
    }
  });

  it("a timed-out server does not pass a check the other server fails", async () => {
    dns.behave("127.0.0.2", "silent");
    dns.addTxt("_icv-challenge.example.test", "icv-verify=stale", "127.0.0.1");
    const r = await checkDns("example.test", TOKEN, opts);
    expect(r.passed).toBe(false);
  });

  it("follows a CNAME on the challenge name to the target zone's own servers", async () => {
    // example.test delegates validation to validations.test, served only by 127.0.0.3
    dns.set("_icv-challenge.example.test", { CNAME: "target.validations.test" });
    dns.zone("validations.test", ["127.0.0.3"]);
    dns.addTxt("target.validations.test", TOKEN, "127.0.0.3");
    const r = await checkDns("example.test", TOKEN, opts);
    expect(r.passed, r.summary).toBe(true);
    expect(r.summary).toContain("through CNAME from _icv-challenge.example.test");
    expect(r.observations.map((o) => [o.source, o.found, o.matched])).toEqual([
      [`ns1.example.test (127.0.0.1:${dns.port})`, ["CNAME target.validations.test"], true],
      [`ns2.example.test (127.0.0.2:${dns.port})`, ["CNAME target.validations.test"], true],
      [`ns1.validations.test (127.0.0.3:${dns.port})`, [TOKEN], true],
    ]);
  });

  it("a CNAME whose target lacks the record fails, and a CNAME loop is caught", async () => {
    dns.set("_icv-challenge.example.test", { CNAME: "target.validations.test" });
    dns.zone("validations.test", ["127.0.0.3"]);
    dns.set("target.validations.test", { TXT: ["icv-verify=other"] }, "127.0.0.3");
    const wrong = await checkDns("example.test", TOKEN, opts);
    expect(wrong.passed).toBe(false);
    expect(wrong.summary).toContain('has "icv-verify=other"');
    expect(wrong.observations.slice(0, 2).every((o) => !o.matched)).toBe(true);

    dns.set("target.validations.test", { CNAME: "_icv-challenge.example.test" });
    const loop = await checkDns("example.test", TOKEN, opts);
    expect(loop.passed).toBe(false);
    expect(loop.summary).toContain("loops");
  });

  it("a TXT set too large for UDP is read over TCP, and what it shows is capped", async () => {
    for (let i = 0; i < 24; i++) dns.addTxt("_icv-challenge.example.test", `unrelated-verification-${i}=${"v".repeat(40)}`);
    dns.addTxt("_icv-challenge.example.test", TOKEN);
    const before = dns.queries.length;
    const r = await checkDns("example.test", TOKEN, opts);
    expect(r.passed, r.summary).toBe(true);
    expect(r.observations[0].found).toHaveLength(11);
    expect(r.observations[0].found[10]).toBe("… and 15 more");
    // the TXT answers did not fit 512 bytes: the servers were asked again over TCP
    const asked = dns.queries.slice(before).filter((q) => q.name === "_icv-challenge.example.test" && q.type === "TXT");
    expect(asked.map((q) => q.server).sort()).toEqual(["127.0.0.1", "127.0.0.1", "127.0.0.2", "127.0.0.2"]);
  });

  it("finds the zone of a subdomain by walking up to the enclosing zone", async () => {
    dns.addTxt("_icv-challenge.www.example.test", TOKEN);
    const r = await checkDns("www.example.test", TOKEN, opts);
    expect(r.passed, r.summary).toBe(true);
    expect(r.summary).toContain("at _icv-challenge.www.example.test on 2 of 2 authoritative servers of example.test");
  });

  it("never sends a query to a name server inside our network (an NS record pointing at 10.0.0.5 or the metadata address)", async () => {
    dns.set("example.test", { NS: ["ns1.example.test", "ns2.example.test", "ns3.example.test"] });
    dns.set("ns2.example.test", { A: ["10.0.0.5"] });
    dns.set("ns3.example.test", { A: ["169.254.169.254"] });
    dns.addTxt("_icv-challenge.example.test", TOKEN);
    try {
      const started = Date.now();
      const r = await checkDns("example.test", TOKEN, opts);
      expect(r.observations.map((o) => o.error)).toEqual([
        "",
        "refused: 10.0.0.5 is a private address",
        "refused: 169.254.169.254 is a cloud metadata address",
      ]);
      expect(r.observations.slice(1).every((o) => !o.matched)).toBe(true);
      // refused before sending: no timeout was waited for
      expect(Date.now() - started).toBeLessThan(300);
    } finally {
      dns.remove("ns3.example.test");
    }
  });

  it("asks every name server before any gets a second address: one with four addresses cannot crowd out a stale one", async () => {
    dns.set("example.test", { NS: ["ns1.example.test", "ns2.example.test"] });
    dns.set("ns1.example.test", { A: ["127.0.0.1", "127.0.0.3", "127.0.0.4", "127.0.0.5"] });
    dns.addTxt("_icv-challenge.example.test", TOKEN, "127.0.0.1");
    dns.addTxt("_icv-challenge.example.test", TOKEN, "127.0.0.3");
    const r = await checkDns("example.test", TOKEN, opts);
    expect(r.observations.map((o) => o.source)).toEqual([
      `ns1.example.test (127.0.0.1:${dns.port})`,
      `ns2.example.test (127.0.0.2:${dns.port})`,
      `ns1.example.test (127.0.0.3:${dns.port})`,
      `ns1.example.test (127.0.0.4:${dns.port})`,
    ]);
    expect(r.passed).toBe(false);
    expect(r.summary).toContain(`ns2.example.test (127.0.0.2:${dns.port})`);
  });

  it("asks at most four addresses", async () => {
    dns.set("example.test", { NS: ["ns1.example.test", "ns2.example.test", "ns3.example.test"] });
    dns.set("ns3.example.test", { A: ["127.0.0.3", "127.0.0.4", "127.0.0.5"] });
    dns.addTxt("_icv-challenge.example.test", TOKEN);
    try {
      const r = await checkDns("example.test", TOKEN, opts);
      expect(r.observations).toHaveLength(4);
    } finally {
      dns.remove("ns3.example.test");
    }
  });
});
