// Domain checks through the public API against real servers on loopback: an authoritative DNS
// server answering as two name servers that can disagree (test/support/dns-server.ts) and a web
// server for the HTTP file. manual_dns found on every server, on one of two (fails and names the
// server), through a CNAME, with a wrong value, NXDOMAIN, one server timing out; the provider
// named from NS records; http_file found, a redirect to another domain refused, a body over 4 KB;
// a re-check after the record is removed suspends the proof without revoking; the 24 h expiry.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "@icv/platform";
import { api } from "../support/stack.ts";
import { useStack, useTenant } from "../support/use-stack.ts";
import { expectError } from "../support/expect-error.ts";
import { startDnsZones, type DnsZones } from "../support/dns-server.ts";
import { startDomainSite, type DomainSite } from "../support/domain-site.ts";
import { domainCheckEnv } from "../support/domain-env.ts";

const NS1 = "127.0.0.1";
const NS2 = "127.0.0.2";
let dns: DnsZones;

let site: DomainSite;
const FILE = "/.well-known/icv-verify.txt";

beforeAll(async () => {
  dns = await startDnsZones({ addresses: [NS1, NS2] });
  site = await startDomainSite();
});
afterAll(async () => {
  await site?.close();
  await dns?.close();
});

const clock = new ManualClock(Date.now());
const stack = useStack(
  () => ({
    ...domainCheckEnv({ dns, site }),
    DNS_QUERY_TIMEOUT_MS: "400",
    ALLOW_PRIVATE_TARGETS: "true",
  }),
  clock,
);
const t = useTenant(stack, "Domain checks");

let n = 0;
/** A new zone served by both name servers, its web host on loopback. */
function zone(): string {
  const name = `site${n++}.example.test`;
  dns.zone(name, [NS1, NS2], { A: [site.address] });
  return name;
}

const live = () => api(stack.url, t.liveKey);
async function create(domain: string, method = "manual_dns") {
  const r = await live().post("/api/v1/verifications/domain", { domain, verification_method: method });
  expect(r.status, r.text).toBe(201);
  return r.body;
}
/** A check; the 5 s limit is passed by moving the stack's clock first. */
async function check(id: string) {
  clock.advance(5_000);
  const r = await live().post(`/api/v1/verifications/domain/${id}/check`);
  expect(r.status, r.text).toBe(200);
  return r.body;
}
const sourceOf = (c: any, address: string) => c.last_check.found.find((f: any) => f.source.includes(address));

describe("manual_dns", () => {
  it("is pending until the record is on every server, then verified with a dns_txt proof; every check counts", async () => {
    const domain = zone();
    const d = await create(domain);
    const before = await check(d.id);
    expect(before).toMatchObject({ status: "pending", verified: false, check_count: 1 });
    expect(before.last_check.passed).toBe(false);

    dns.addTxt(d.dns_record.name, d.dns_record.value);
    const after = await check(d.id);
    expect(after).toMatchObject({ id: d.id, domain, status: "verified", verified: true, check_count: 2 });
    expect(after.verified_at).toBeTruthy();
    expect(after.last_check.passed).toBe(true);
    expect(after.last_check.found).toHaveLength(2);
    for (const address of [NS1, NS2]) expect(sourceOf(after, address)).toMatchObject({ values: [d.dns_record.value], matched: true });
    // the servers were asked as authoritative servers (no recursion), on the record's name
    expect(dns.queries.some((q) => q.server === NS2 && q.name === d.dns_record.name && q.type === "TXT" && !q.recursionDesired)).toBe(true);

    const v = (await live().get(`/api/v1/verifications/${d.id}`)).body;
    expect(v).toMatchObject({ status: "verified", method: "dns_txt", test_mode: false });
    const valid = await live().post("/api/v1/proofs/validate", { proof_token: v.proof.token, identifier: domain });
    expect(valid.body).toMatchObject({ valid: true });
  });

  it("found on one of two servers fails and names the server that lacks it", async () => {
    const d = await create(zone());
    dns.addTxt(d.dns_record.name, d.dns_record.value, NS1);
    const c = await check(d.id);
    expect(c).toMatchObject({ status: "pending", verified: false });
    expect(sourceOf(c, NS1)).toMatchObject({ matched: true });
    expect(sourceOf(c, NS2)).toMatchObject({ matched: false });
    expect(c.last_check.summary).toMatch(/ns2\.|127\.0\.0\.2/);
  });

  it("follows a CNAME on the challenge name to where the record is delegated", async () => {
    const domain = zone();
    const d = await create(domain);
    const target = `_acme-delegated.${zone()}`;
    dns.set(d.dns_record.name, { CNAME: target });
    dns.addTxt(target, d.dns_record.value);
    const c = await check(d.id);
    expect(c.status, JSON.stringify(c.last_check)).toBe("verified");
  });

  it("a wrong value fails and says what it found", async () => {
    const d = await create(zone());
    dns.addTxt(d.dns_record.name, "icv-verify=an-old-token");
    dns.addTxt(d.dns_record.name, "v=spf1 -all");
    const c = await check(d.id);
    expect(c.status).toBe("pending");
    for (const address of [NS1, NS2]) {
      expect(sourceOf(c, address).matched).toBe(false);
      expect(sourceOf(c, address).values).toEqual(expect.arrayContaining(["icv-verify=an-old-token", "v=spf1 -all"]));
    }
  });

  it("no record yet: every server answers NXDOMAIN for the challenge name, and the check says so", async () => {
    const c = await check((await create(zone())).id);
    expect(c.status).toBe("pending");
    for (const address of [NS1, NS2]) expect(sourceOf(c, address)).toMatchObject({ matched: false, values: [], error: expect.stringMatching(/NXDOMAIN/) });
  });

  it("a domain that does not exist fails and says its name servers could not be found", async () => {
    const c = await check((await create(`missing${n++}.example.test`)).id);
    expect(c.status).toBe("pending");
    expect(c.last_check.summary).toMatch(/name server|NXDOMAIN/i);
  });

  it("a server that times out does not decide: the record on every server that answered passes, and the timeout is shown", async () => {
    const d = await create(zone());
    dns.addTxt(d.dns_record.name, d.dns_record.value);
    dns.behave(NS2, "silent");
    try {
      const c = await check(d.id);
      expect(c.status, JSON.stringify(c.last_check)).toBe("verified");
      expect(sourceOf(c, NS1).matched).toBe(true);
      expect(sourceOf(c, NS2).error).toMatch(/time/i);
    } finally {
      dns.behave(NS2, "answer");
    }
  });

  it("names the DNS host from the NS records at create", async () => {
    const name = `hosted${n++}.example.test`;
    dns.set(name, { NS: ["amy.ns.cloudflare.com", "bob.ns.cloudflare.com"] });
    dns.set("amy.ns.cloudflare.com", { A: [NS1] });
    dns.set("bob.ns.cloudflare.com", { A: [NS2] });
    const d = await create(name);
    expect(d.provider).toEqual({ detected: "cloudflare", name: "Cloudflare" });
    expect((await create(zone())).provider.detected).toBe("unknown");
  });
});

describe("re-checks and expiry", () => {
  it("a re-check after the record is removed suspends the proof without revoking; /verify shows the same", async () => {
    const d = await create(zone());
    dns.addTxt(d.dns_record.name, d.dns_record.value);
    expect((await check(d.id)).status).toBe("verified");
    expect((await check(d.id)).last_check.passed).toBe(true);

    dns.removeTxt(d.dns_record.name, d.dns_record.value);
    const gone = await check(d.id);
    expect(gone).toMatchObject({ status: "suspended", verified: false, reason: "record_missing", check_count: 3 });
    expect(gone.last_check.passed).toBe(false);
    clock.advance(5_000);
    const verify = await live().post(`/api/v1/verifications/${d.id}/verify`);
    expect(verify.body).toMatchObject({ status: "suspended", method: "dns_txt", suspended_reason: "record_missing" });
    expect(verify.body.last_check.passed).toBe(false);
    const status = await live().get(`/api/v1/proofs/${d.id}/status`);
    expect(status.body).toMatchObject({ is_valid: false, is_suspended: true, is_revoked: false });
  });

  it("expires 24 h after create: a check then is challenge_expired and the verification expired", async () => {
    const d = await create(zone());
    clock.advance(24 * 3600_000 + 1000);
    expectError(await live().post(`/api/v1/verifications/domain/${d.id}/check`), 400, "challenge_expired");
    expect((await live().get(`/api/v1/verifications/${d.id}`)).body.status).toBe("expired");
  });
});

describe("http_file", () => {
  it("the file served over http verifies it with an http_file proof", async () => {
    const domain = zone();
    const d = await create(domain, "http_file");
    site.serve(domain, FILE, { body: `${d.http_file.content}\n` });
    const c = await check(d.id);
    expect(c.status, JSON.stringify(c.last_check)).toBe("verified");
    expect(c.last_check.found[0].source).toContain(`${domain}`);
    expect((await live().get(`/api/v1/verifications/${d.id}`)).body.method).toBe("http_file");
  });

  it("a missing file fails and shows the status it got", async () => {
    const d = await create(zone(), "http_file");
    const c = await check(d.id);
    expect(c.status).toBe("pending");
    expect(JSON.stringify(c.last_check.found)).toMatch(/404/);
  });

  it("a redirect to another domain is refused, even when the other domain serves the value", async () => {
    const domain = zone();
    const elsewhere = zone();
    const d = await create(domain, "http_file");
    site.serve(domain, FILE, { status: 302, location: `http://${elsewhere}:${site.httpPort}${FILE}` });
    site.serve(elsewhere, FILE, { body: d.http_file.content });
    const c = await check(d.id);
    expect(c.status).toBe("pending");
    expect(JSON.stringify(c.last_check)).toMatch(/redirect/i);
  });

  it("a body over 4 KB is not read past 4 KB and does not pass, even when it starts with the value", async () => {
    const domain = zone();
    const d = await create(domain, "http_file");
    site.serve(domain, FILE, { body: `${d.http_file.content}\n${"x".repeat(8 * 1024)}` });
    const c = await check(d.id);
    expect(c.status).toBe("pending");
    expect(JSON.stringify(c.last_check).length).toBeLessThan(4096);
  });
});
