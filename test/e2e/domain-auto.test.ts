// Domain verifications that reach the domain's own people or DNS host, through the public API:
// by email (the code mailed to admin@ or another admin mailbox over a real SMTP server, then
// submitted) and auto (the record written through each DNS host's API, checked on the
// authoritative servers, removed again, also when the check fails; local servers speaking the
// Cloudflare, DigitalOcean, GoDaddy and Route53 APIs). The credentials given for auto are in no
// log line, no answer and no database row.
import path from "node:path";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "@icv/platform";
import { api } from "../support/stack.ts";
import { useStack, useTenant } from "../support/use-stack.ts";
import { expectError } from "../support/expect-error.ts";
import { startSmtp } from "../support/smtp.ts";
import { startDnsZones, type DnsZones } from "../support/dns-server.ts";
import { startDnsHostApi, type DnsHost, type DnsHostApi } from "../support/dns-hosts.ts";
import { domainCheckEnv } from "../support/domain-env.ts";

const NS1 = "127.0.0.1";
const NS2 = "127.0.0.2";
const PROVIDERS: DnsHost[] = ["cloudflare", "digitalocean", "godaddy", "route53"];
let dns: DnsZones;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
const hosts = {} as Record<DnsHost, DnsHostApi>;
const zoneOf = (p: DnsHost, kind: "ok" | "stale") => `${kind}-${p}.example.test`;

// every log line the stack writes
const logLines: string[] = [];
const logTo = new Writable({
  write(chunk: Buffer, _enc, done) {
    logLines.push(...chunk.toString("utf8").split("\n").filter(Boolean));
    done();
  },
});

beforeAll(async () => {
  smtp = await startSmtp();
  dns = await startDnsZones({ addresses: [NS1, NS2] });
  for (const p of PROVIDERS) {
    for (const kind of ["ok", "stale"] as const) dns.zone(zoneOf(p, kind), [NS1, NS2]);
    // the stale zone's second server still answers the challenge name with an old delegation
    dns.set(`_icv-challenge.${zoneOf(p, "stale")}`, { CNAME: `old.${zoneOf(p, "stale")}` }, NS2);
    dns.set(`old.${zoneOf(p, "stale")}`, { TXT: ["icv-verify=left-over-from-last-year"] }, NS2);
    hosts[p] = await startDnsHostApi(p, { dns, zones: [zoneOf(p, "ok"), zoneOf(p, "stale")] });
  }
});
afterAll(async () => {
  await Promise.all(Object.values(hosts).map((h) => h.close()));
  await dns?.close();
  await smtp?.close();
});

const stack = useStack(
  () => ({
    LOG_LEVEL: "debug",
    SMTP_URL: smtp.url,
    SMTP_FROM: "ICV <codes@icv.test>",
    ...domainCheckEnv({ dns, apis: Object.values(hosts), propagationMs: 1500 }),
    DNS_QUERY_TIMEOUT_MS: "400",
    ALLOW_PRIVATE_TARGETS: "true",
  }),
  undefined,
  { logTo },
);
const t = useTenant(stack, "Domain owners");
const live = () => api(stack.url, t.liveKey);

const codeIn = (raw: string) => /verification code is (?:<\/p><p[^>]*>)?\s*([A-Z0-9]{6})/.exec(raw)?.[1];

describe("by email", () => {
  it("mails the code to admin@domain (never to the caller); submitting it verifies with an otp proof", async () => {
    const created = await live().post("/api/v1/verifications", {
      type: "domain",
      channel: "email",
      identifier: "https://www.mail-one.example.test/",
    });
    expect(created.status, created.text).toBe(201);
    expect(created.text).not.toMatch(/"code"/);
    const mail = await smtp.waitFor("admin@mail-one.example.test");
    const code = codeIn(mail.raw)!;
    expect(code).toMatch(/^[A-Z0-9]{6}$/);
    expect(mail.raw).toContain("mail-one.example.test");
    const done = await live().post(`/api/v1/verifications/${created.body.id}/submit`, { challenge_code: code });
    expect(done.status, done.text).toBe(200);
    expect(done.body).toMatchObject({ status: "verified", method: "otp", type: "domain", channel: "email" });
  });

  it("email_prefix sends it to that mailbox and not to admin@", async () => {
    const created = await live().post("/api/v1/verifications", {
      type: "domain",
      channel: "email",
      identifier: "mail-two.example.test",
      email_prefix: "webmaster",
    });
    expect(created.status, created.text).toBe(201);
    await smtp.waitFor("webmaster@mail-two.example.test");
    expect(smtp.inbox.some((m) => m.to.includes("admin@mail-two.example.test"))).toBe(false);
  });
});

describe("auto, through each DNS host's API", () => {
  it.each(PROVIDERS)("%s: writes the record, checks it on every server, removes it; verified with a dns_provider proof", async (p) => {
    const h = hosts[p];
    const domain = zoneOf(p, "ok");
    const r = await live().post("/api/v1/verifications", {
      type: "domain",
      channel: "auto",
      identifier: domain,
      dns_provider: { name: p, credentials: h.credentials },
    });
    expect(r.status, r.text).toBe(201);
    expect(r.body).toMatchObject({ status: "verified", method: "dns_provider" });
    expect(r.body.last_check.passed).toBe(true);
    const value = r.body.challenge ? r.body.challenge.message : undefined;
    expect(h.writes).toContainEqual({ name: `_icv-challenge.${domain}`, value: expect.stringMatching(/^icv-verify=/) });
    expect(h.deletes).toContainEqual(h.writes.find((w) => w.name === `_icv-challenge.${domain}`));
    expect(h.records()).toEqual([]);
    expect(dns.txt(`_icv-challenge.${domain}`, NS1)).toEqual([]);
    expect(value).toBeUndefined(); // verified: no open challenge
  });

  it.each(PROVIDERS)("%s: when the check fails (a stale server) the record is removed all the same and the verification stays pending", async (p) => {
    const h = hosts[p];
    const domain = zoneOf(p, "stale");
    const r = await live().post("/api/v1/verifications", {
      type: "domain",
      channel: "auto",
      identifier: domain,
      dns_provider: { name: p, credentials: h.credentials },
    });
    expect(r.status, r.text).toBe(201);
    expect(r.body.status).toBe("pending");
    expect(r.body.last_check.passed).toBe(false);
    expect(JSON.stringify(r.body.last_check)).toContain("left-over-from-last-year");
    const written = h.writes.filter((w) => w.name === `_icv-challenge.${domain}`);
    expect(written).toHaveLength(1);
    expect(h.deletes).toContainEqual(written[0]);
    expect(h.records()).toEqual([]);
  });

  it("credentials the host refuses leave a pending verification saying so, and nothing written", async () => {
    const domain = zoneOf("cloudflare", "ok");
    const before = hosts.cloudflare.writes.length;
    const r = await live().post("/api/v1/verifications", {
      type: "domain",
      channel: "auto",
      identifier: domain,
      dns_provider: { name: "cloudflare", credentials: { api_token: "cf-wrong-token-0000" } },
    });
    expect(r.status, r.text).toBe(201);
    expect(r.body.status).toBe("pending");
    expect(r.body.last_check.passed).toBe(false);
    expect(hosts.cloudflare.writes.length).toBe(before);
    expect(r.text).not.toContain("cf-wrong-token-0000");
  });

  it("a refused dns_provider is validation_error and never echoes a value", async () => {
    const r = await live().post("/api/v1/verifications", {
      type: "domain",
      channel: "auto",
      identifier: "x.example.test",
      dns_provider: { name: "route53", credentials: { access_key_id: "AKIAONLYHALF" } },
    });
    expectError(r, 400, "validation_error");
    expect(r.text).not.toContain("AKIAONLYHALF");
  });
});

describe("test keys", () => {
  it("send no mail and call no DNS host; test-verify completes them with method test", async () => {
    const test = api(stack.url, t.testKey);
    const mails = smtp.inbox.length;
    const writes = PROVIDERS.map((p) => hosts[p].writes.length + hosts[p].refused);
    const queries = dns.queries.length;
    const byMail = await test.post("/api/v1/verifications", { type: "domain", channel: "email", identifier: "quiet.example.test" });
    const auto = await test.post("/api/v1/verifications", {
      type: "domain",
      channel: "auto",
      identifier: zoneOf("godaddy", "ok"),
      dns_provider: { name: "godaddy", credentials: hosts.godaddy.credentials },
    });
    const dnsOne = await test.post("/api/v1/verifications/domain", { domain: zoneOf("cloudflare", "ok") });
    expect([byMail.status, auto.status, dnsOne.status]).toEqual([201, 201, 201]);
    expect((await test.post(`/api/v1/verifications/domain/${dnsOne.body.id}/check`)).body.status).toBe("pending");
    for (const id of [byMail.body.id, auto.body.id, dnsOne.body.id]) {
      const done = await test.post(`/api/v1/verifications/${id}/test-verify`);
      expect(done.body).toMatchObject({ status: "verified", test_mode: true });
      expect((await test.get(`/api/v1/verifications/${id}`)).body.method).toBe("test");
    }
    await new Promise((r) => setTimeout(r, 300));
    expect(smtp.inbox.length).toBe(mails);
    expect(PROVIDERS.map((p) => hosts[p].writes.length + hosts[p].refused)).toEqual(writes);
    expect(dns.queries.length).toBe(queries);
  });
});

describe("the credentials leave no trace", () => {
  const secrets = () => [...PROVIDERS.flatMap((p) => Object.values(hosts[p].credentials)), "cf-wrong-token-0000"];

  it("in no log line (the stack logged at debug through every test above)", () => {
    expect(logLines.length).toBeGreaterThan(10);
    expect(logLines.some((l) => l.includes("verification created"))).toBe(true);
    for (const s of secrets()) {
      const hit = logLines.find((l) => l.includes(s));
      expect(hit, `a log line holds a credential: ${hit?.slice(0, 200)}`).toBeUndefined();
    }
  });

  it("in no database row of any service", async () => {
    const db = await openDatabase(stack.env.DATABASE_URL ? { url: stack.env.DATABASE_URL, poolMax: 2 } : { dataDir: path.join(stack.dataDir, "pgdata") });
    try {
      const tables = await db.query<{ s: string; t: string }>(
        `SELECT table_schema AS s, table_name AS t FROM information_schema.tables
          WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')`,
      );
      expect(tables.rows.some((r) => r.s === "verification" && r.t === "domain_checks")).toBe(true);
      let dumped = 0;
      for (const { s, t } of tables.rows) {
        const rows = await db.query(`SELECT * FROM "${s}"."${t}"`);
        const text = JSON.stringify(rows.rows);
        dumped += text.length;
        for (const secret of secrets()) expect(text.includes(secret), `${s}.${t} holds a credential`).toBe(false);
      }
      expect(dumped).toBeGreaterThan(1000);
    } finally {
      await db.close();
    }
  });
});
