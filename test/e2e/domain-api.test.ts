// Domain verification through the public API where no DNS is needed: the domain-shaped create
// and its check shape, test keys (nothing asked, test-verify completes with method test), the
// check's 5 s limit, isolation across tenants and environments, the create options of
// POST /verifications (email_prefix, dns_provider) and /verify on other types.
import { describe, expect, it } from "vitest";
import { ManualClock } from "@icv/platform";
import { api } from "../support/stack.ts";
import { useStack, useTenant } from "../support/use-stack.ts";
import { expectError } from "../support/expect-error.ts";

const clock = new ManualClock(Date.now());
const stack = useStack({}, clock);
const t = useTenant(stack, "Domains");
const other = useTenant(stack, "Other");

let n = 0;
const name = () => `shop-${n++}.example.com`;

describe("POST /api/v1/verifications/domain", () => {
  it("answers the domain-shaped view: the TXT record and the file to publish, pending, the provider (test keys: unknown)", async () => {
    const r = await api(stack.url, t.testKey).post("/api/v1/verifications/domain", {
      domain: "https://WWW.Acme-Shop.example.COM/about",
      customer_id: "cust-7",
    });
    expect(r.status, r.text).toBe(201);
    const v = r.body;
    expect(v).toMatchObject({
      domain: "acme-shop.example.com",
      status: "pending",
      verification_method: "manual_dns",
      provider: { detected: "unknown", name: "Unknown" },
    });
    expect(v.id).toMatch(/^ver_/);
    expect(v.dns_record).toEqual({
      type: "TXT",
      name: "_icv-challenge.acme-shop.example.com",
      value: expect.stringMatching(/^icv-verify=[A-Za-z0-9_-]{43}$/),
    });
    expect(v.http_file).toEqual({ path: "/.well-known/icv-verify.txt", content: v.dns_record.value });
    expect(Date.parse(v.expires_at) - Date.now()).toBeGreaterThan(24 * 3600_000 - 60_000);
    // the same verification through the generic API: type domain, channel dns, the customer as external_user_id
    const got = await api(stack.url, t.testKey).get(`/api/v1/verifications/${v.id}`);
    expect(got.body).toMatchObject({
      type: "domain",
      channel: "dns",
      identifier: "acme-shop.example.com",
      external_user_id: "cust-7",
      status: "pending",
    });
    expect(got.body.challenge.message).toBe(v.dns_record.value);
  });

  it("every verification gets its own 32-byte token", async () => {
    const c = api(stack.url, t.testKey);
    const a = await c.post("/api/v1/verifications/domain", { domain: name() });
    const b = await c.post("/api/v1/verifications/domain", { domain: name(), verification_method: "http_file" });
    expect(b.body.verification_method).toBe("http_file");
    expect(Buffer.from(a.body.dns_record.value.slice("icv-verify=".length), "base64url")).toHaveLength(32);
    expect(a.body.dns_record.value).not.toBe(b.body.dns_record.value);
  });

  it("refuses a bad domain, method or field", async () => {
    const c = api(stack.url, t.testKey);
    expectError(await c.post("/api/v1/verifications/domain", { domain: "localhost" }), 400, "invalid_identifier");
    expectError(await c.post("/api/v1/verifications/domain", { domain: "1.2.3.4" }), 400, "invalid_identifier");
    expectError(await c.post("/api/v1/verifications/domain", { domain: "example.com", verification_method: "email" }), 400, "validation_error");
    expectError(await c.post("/api/v1/verifications/domain", { domain: "example.com", extra: 1 }), 400, "validation_error");
    expectError(await c.post("/api/v1/verifications/domain", {}), 400, "validation_error");
  });
});

describe("test keys", () => {
  it("a check asks nothing and says so; test-verify completes it with method test; the check then shows it verified", async () => {
    const c = api(stack.url, t.testKey);
    const d = (await c.post("/api/v1/verifications/domain", { domain: name() })).body;
    const check = await c.post(`/api/v1/verifications/domain/${d.id}/check`);
    expect(check.status, check.text).toBe(200);
    expect(check.body).toMatchObject({
      id: d.id,
      domain: d.domain,
      status: "pending",
      verified: false,
      check_count: 1,
      verification_method: "manual_dns",
    });
    expect(check.body.last_check).toMatchObject({ passed: false, found: [] });
    expect(check.body.last_check.summary).toMatch(/test mode/i);
    const done = await c.post(`/api/v1/verifications/${d.id}/test-verify`);
    expect(done.body).toMatchObject({ status: "verified", test_mode: true });
    const got = await c.get(`/api/v1/verifications/${d.id}`);
    expect(got.body.method).toBe("test");
  });

  it("channel auto with a test key calls no provider and stays pending until test-verify", async () => {
    const c = api(stack.url, t.testKey);
    const r = await c.post("/api/v1/verifications", {
      type: "domain",
      channel: "auto",
      identifier: name(),
      dns_provider: { name: "cloudflare", credentials: { api_token: "cf-test-token-never-used" } },
    });
    expect(r.status, r.text).toBe(201);
    expect(r.body.status).toBe("pending");
    expect(r.body.last_check.summary).toMatch(/test mode/i);
    expect(r.text).not.toContain("cf-test-token-never-used");
    expect((await c.post(`/api/v1/verifications/${r.body.id}/test-verify`)).body.status).toBe("verified");
  });
});

describe("the check's limit: one per 5 s per verification", () => {
  it("answers 429 with Retry-After to a second check within 5 s; another verification is not held up", async () => {
    const c = api(stack.url, t.testKey);
    const a = (await c.post("/api/v1/verifications/domain", { domain: name() })).body;
    const b = (await c.post("/api/v1/verifications/domain", { domain: name() })).body;
    expect((await c.post(`/api/v1/verifications/domain/${a.id}/check`)).status).toBe(200);
    const again = await c.post(`/api/v1/verifications/${a.id}/verify`);
    const e = expectError(again, 429, "rate_limited");
    const retry = Number(again.headers.get("retry-after"));
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(5);
    expect(e.retry_after).toBe(retry);
    expect((await c.post(`/api/v1/verifications/domain/${b.id}/check`)).status).toBe(200);
    // the refused check did not count
    clock.advance(retry * 1000);
    const third = await c.post(`/api/v1/verifications/domain/${a.id}/check`);
    expect(third.body.check_count).toBe(2);
  });
});

describe("concurrent checks", () => {
  it("three checks of one verification at the same moment: one runs and counts, the others are refused", async () => {
    const c = api(stack.url, t.testKey);
    const d = (await c.post("/api/v1/verifications/domain", { domain: name() })).body;
    const all = await Promise.all([1, 2, 3].map(() => c.post(`/api/v1/verifications/domain/${d.id}/check`)));
    expect(all.map((r) => r.status).sort()).toEqual([200, 429, 429]);
    expect(all.find((r) => r.status === 200)!.body.check_count).toBe(1);
  });
});

describe("isolation and wrong types", () => {
  it("another tenant's or environment's domain verification answers 404", async () => {
    const d = (await api(stack.url, t.testKey).post("/api/v1/verifications/domain", { domain: name() })).body;
    expectError(await api(stack.url, other.testKey).post(`/api/v1/verifications/domain/${d.id}/check`), 404, "not_found");
    expectError(await api(stack.url, other.testKey).post(`/api/v1/verifications/${d.id}/verify`), 404, "not_found");
    expectError(await api(stack.url, t.liveKey).post(`/api/v1/verifications/domain/${d.id}/check`), 404, "not_found");
    // nothing was counted by the refused calls
    const mine = await api(stack.url, t.testKey).post(`/api/v1/verifications/domain/${d.id}/check`);
    expect(mine.body.check_count).toBe(1);
  });

  it("/verify on a verification that is not a domain checked by DNS or HTTP is invalid_state", async () => {
    const c = api(stack.url, t.testKey);
    const phone = await c.post("/api/v1/verifications", { type: "email", channel: "email", identifier: "jane@example.com" });
    expectError(await c.post(`/api/v1/verifications/${phone.body.id}/verify`), 409, "invalid_state");
    expectError(await c.post(`/api/v1/verifications/domain/${phone.body.id}/check`), 409, "invalid_state");
    const byMail = await c.post("/api/v1/verifications", { type: "domain", channel: "email", identifier: name() });
    expectError(await c.post(`/api/v1/verifications/${byMail.body.id}/verify`), 409, "invalid_state");
  });
});

describe("create options on POST /api/v1/verifications", () => {
  it("email_prefix picks the mailbox (test messages show where the code would go, resends too); anything else is refused", async () => {
    const c = api(stack.url, t.testKey);
    const domain = name();
    const r = await c.post("/api/v1/verifications", { type: "domain", channel: "email", identifier: domain, email_prefix: "hostmaster" });
    expect(r.status, r.text).toBe(201);
    expect(r.body.challenge.instruction).toContain(`hostmaster@${domain}`);
    const msgs = await c.get(`/api/v1/test/messages?verification_id=${r.body.id}`);
    expect(msgs.body.data[0].to).toBe(`hostmaster@${domain}`);
    // a resend goes to the same mailbox
    clock.advance(61_000);
    const resent = await c.post(`/api/v1/verifications/${r.body.id}/resend`);
    expect(resent.status, resent.text).toBe(200);
    const after = await c.get(`/api/v1/test/messages?verification_id=${r.body.id}`);
    expect(after.body.data.map((m: { to: string }) => m.to)).toEqual([`hostmaster@${domain}`, `hostmaster@${domain}`]);
    const dflt = await c.post("/api/v1/verifications", { type: "domain", channel: "email", identifier: name() });
    expect((await c.get(`/api/v1/test/messages?verification_id=${dflt.body.id}`)).body.data[0].to).toMatch(/^admin@/);
    expectError(await c.post("/api/v1/verifications", { type: "domain", channel: "email", identifier: name(), email_prefix: "ceo" }), 400, "validation_error");
    expectError(await c.post("/api/v1/verifications", { type: "domain", channel: "dns", identifier: name(), email_prefix: "admin" }), 400, "validation_error");
    expectError(
      await c.post("/api/v1/verifications", { type: "email", channel: "email", identifier: "a@example.com", email_prefix: "admin" }),
      400,
      "validation_error",
    );
  });

  it("dns_provider is required on auto, refused elsewhere, and must carry exactly the provider's fields (never echoed)", async () => {
    const c = api(stack.url, t.testKey);
    const auto = (extra: Record<string, unknown>) => c.post("/api/v1/verifications", { type: "domain", channel: "auto", identifier: name(), ...extra });
    expectError(await auto({}), 400, "validation_error");
    expectError(await auto({ dns_provider: { name: "namecheap", credentials: { api_token: "x" } } }), 400, "validation_error");
    const wrong = await auto({ dns_provider: { name: "godaddy", credentials: { key: "gd-key-secret-value" } } });
    expectError(wrong, 400, "validation_error");
    expect(wrong.text).not.toContain("gd-key-secret-value");
    expectError(
      await auto({ dns_provider: { name: "route53", credentials: { access_key_id: "AKIA", secret_access_key: "s", extra: "x" } } }),
      400,
      "validation_error",
    );
    expectError(
      await c.post("/api/v1/verifications", {
        type: "domain",
        channel: "dns",
        identifier: name(),
        dns_provider: { name: "cloudflare", credentials: { api_token: "x" } },
      }),
      400,
      "validation_error",
    );
    for (const [provider, credentials] of [
      ["cloudflare", { api_token: "t" }],
      ["digitalocean", { token: "t" }],
      ["godaddy", { key: "k", secret: "s" }],
      ["route53", { access_key_id: "AKIAEXAMPLE", secret_access_key: "s" }],
    ] as const) {
      expect((await auto({ dns_provider: { name: provider, credentials } })).status, provider).toBe(201);
    }
  });
});
