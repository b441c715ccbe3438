// Proof of current control (issue 27), through the public API against the local authoritative
// DNS pair (two name servers that can disagree, test/support/dns-server.ts): a re-check of a
// verified domain whose record left one of the two servers suspends its proof (check answer,
// proof status, validate, status list, the verification, webhooks), putting it back reinstates
// it; an unreachable zone suspends only at the third failed check in a row; the owner's `_icv`
// policy refuses another issuer or tenant and lets this issuer and tenant pass; a malformed
// policy is ignored and shown; revoked and expired proofs are not re-checked; recheck_interval's
// bad inputs. Scheduled re-checks (the sweeper) are in domain-rechecks.test.ts.
import { decodeJwt } from "jose";
import { getListFromStatusListJWT } from "@sd-jwt/jwt-status-list";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { ManualClock } from "@icv/platform";
import { domainCheckEnv } from "../support/domain-env.ts";
import { startDnsZones, type DnsZones } from "../support/dns-server.ts";
import { expectError, waitFor } from "../support/expect-error.ts";
import { startReceiver, type Receiver } from "../support/receiver.ts";
import { api } from "../support/stack.ts";
import { useStack, useTenant } from "../support/use-stack.ts";
import { WEBHOOK_SCHEMAS } from "../../services/gateway/src/webhook-schemas.ts";

const NS1 = "127.0.0.1";
const NS2 = "127.0.0.2";
let dns: DnsZones;
let rx: Receiver;

beforeAll(async () => {
  dns = await startDnsZones({ addresses: [NS1, NS2] });
  rx = await startReceiver(200);
});
afterAll(async () => {
  await dns?.close();
  await rx?.close();
});

const clock = new ManualClock(Date.now());
const stack = useStack(() => ({ ...domainCheckEnv({ dns }), DNS_QUERY_TIMEOUT_MS: "1000", ALLOW_PRIVATE_TARGETS: "true" }), clock);
const t = useTenant(stack, "Current control");
beforeAll(async () => {
  await stack.admin.setWebhookEndpoint({ tenantId: t.tenantId, environment: Environment.LIVE, url: rx.url }, { headers: stack.adminHeaders });
});

let n = 0;
/** A new zone served by both name servers. */
function zone(): string {
  const name = `control${n++}.example.test`;
  dns.zone(name, [NS1, NS2]);
  return name;
}

const live = () => api(stack.url, t.liveKey);
/** A check; the 5 s limit is passed by moving the stack's clock first. */
async function check(id: string) {
  clock.advance(5_000);
  const r = await live().post(`/api/v1/verifications/domain/${id}/check`);
  expect(r.status, r.text).toBe(200);
  return r.body;
}
/** A verified domain: created, its record on both servers, checked. */
async function verified(body: Record<string, unknown> = {}) {
  const domain = zone();
  const d = (await live().post("/api/v1/verifications/domain", { domain, ...body })).body;
  dns.addTxt(d.dns_record.name, d.dns_record.value);
  expect((await check(d.id)).status).toBe("verified");
  const v = (await live().get(`/api/v1/verifications/${d.id}`)).body;
  return { id: d.id as string, domain, record: d.dns_record as { name: string; value: string }, token: v.proof.token as string };
}
const sourceOf = (c: any, address: string) => c.last_check.found.find((f: any) => f.source.includes(address) && !f.source.startsWith("_icv."));
const listStatus = async (token: string) => {
  const { status_list } = decodeJwt(token).status as { status_list: { idx: number; uri: string } };
  const jwt = await (await fetch(stack.url + new URL(status_list.uri).pathname)).text();
  return getListFromStatusListJWT(jwt).getStatus(status_list.idx);
};
const validate = (token: string) => live().post("/api/v1/proofs/validate", { proof_token: token });
const hooksOf = (id: string) =>
  rx.requests
    .map((r) => JSON.parse(r.body) as { event: string; verification_id?: string; reason?: string; status?: string })
    .filter((b) => b.verification_id === id && (b.event === "verification.suspended" || b.event === "verification.reinstated"));

describe("a re-check of a verified domain", () => {
  it("suspends the proof when the record left one of the two servers, and reinstates it when it is back; webhooks in that order", async () => {
    const p = await verified();
    dns.removeTxt(p.record.name, p.record.value, NS2);
    const gone = await check(p.id);
    expect(gone).toMatchObject({ id: p.id, status: "suspended", verified: false, reason: "record_missing", suspended_at: expect.any(String) });
    expect(gone.last_check).toMatchObject({ passed: false, reason: "record_missing" });
    expect(sourceOf(gone, NS1)).toMatchObject({ matched: true, values: [p.record.value] });
    expect(sourceOf(gone, NS2)).toMatchObject({ matched: false, values: [] });

    // the proof, the status list and validate follow within 5 s; the verification says why
    expect((await live().get(`/api/v1/proofs/${p.id}/status`)).body).toMatchObject({
      status: "suspended",
      is_valid: false,
      is_suspended: true,
      is_revoked: false,
      suspended_reason: "record_missing",
    });
    expect(await waitFor(async () => (await listStatus(p.token)) === 2, 5000)).toBe(true);
    expect((await validate(p.token)).body).toMatchObject({ valid: false, reason: "suspended" });
    expect((await live().get(`/api/v1/verifications/${p.id}`)).body).toMatchObject({ status: "suspended", suspended_reason: "record_missing" });
    const verify = (await (clock.advance(5_000), live().post(`/api/v1/verifications/${p.id}/verify`))).body;
    expect(verify).toMatchObject({ status: "suspended", last_check: { passed: false, reason: "record_missing" } });

    dns.addTxt(p.record.name, p.record.value, NS2);
    const back = await check(p.id);
    expect(back).toMatchObject({ status: "verified", verified: true, last_check: { passed: true } });
    expect(back.reason).toBeUndefined();
    expect(await waitFor(async () => (await listStatus(p.token)) === 0, 5000)).toBe(true);
    expect((await validate(p.token)).body).toMatchObject({ valid: true });
    expect((await live().get(`/api/v1/proofs/${p.id}/status`)).body).toMatchObject({ is_valid: true, is_suspended: false });

    const hooks = await waitFor(async () => (hooksOf(p.id).length >= 2 ? hooksOf(p.id) : undefined), 5000);
    expect(hooks?.map((h) => [h.event, h.status, h.reason])).toEqual([
      ["verification.suspended", "suspended", "record_missing"],
      ["verification.reinstated", "verified", "record_missing"],
    ]);
    // each body is what the OpenAPI's x-webhooks says it is
    for (const h of hooks!) WEBHOOK_SCHEMAS[h.event as keyof typeof WEBHOOK_SCHEMAS].strict().parse(h);
    // and the operators see it
    const metrics = await (await fetch(`${stack.gateway.adminUrl}/metrics`)).text();
    expect(metrics).toMatch(/icv_domain_rechecks_total\{trigger="call",outcome="record_missing",change="suspended"\} [1-9]/);
    expect(metrics).toMatch(/icv_domain_rechecks_total\{trigger="call",outcome="passed",change="reinstated"\} [1-9]/);
  });

  it("the verification's own callback_url gets verification.suspended and verification.reinstated too", async () => {
    const domain = zone();
    const callback = `${rx.url}-callback`;
    const v = await live().post("/api/v1/verifications", { type: "domain", channel: "dns", identifier: domain, callback_url: callback });
    expect(v.status, v.text).toBe(201);
    const name = `_icv-challenge.${domain}`;
    dns.addTxt(name, v.body.challenge.message);
    expect((await check(v.body.id)).status).toBe("verified");
    dns.removeTxt(name, v.body.challenge.message);
    expect((await check(v.body.id)).status).toBe("suspended");
    dns.addTxt(name, v.body.challenge.message);
    expect((await check(v.body.id)).status).toBe("verified");
    const atCallback = () =>
      rx.requests
        .filter((r) => r.path.endsWith("-callback"))
        .map((r) => JSON.parse(r.body) as { event: string; verification_id: string })
        .filter((b) => b.verification_id === v.body.id)
        .map((b) => b.event);
    expect(await waitFor(async () => atCallback().length >= 3, 5000)).toBe(true);
    expect(atCallback()).toEqual(["verification.completed", "verification.suspended", "verification.reinstated"]);
  });

  it("another value where the record was suspends with record_mismatch; a passing check of a verified proof changes nothing", async () => {
    const p = await verified();
    expect(await check(p.id)).toMatchObject({ status: "verified", last_check: { passed: true } });
    dns.removeTxt(p.record.name, p.record.value);
    dns.addTxt(p.record.name, "icv-verify=someone-else");
    expect(await check(p.id)).toMatchObject({ status: "suspended", reason: "record_mismatch", last_check: { reason: "record_mismatch" } });
  });

  it("an unreachable zone suspends only at the third failed check in a row; one answer in between starts the count again", async () => {
    const p = await verified();
    dns.behave(NS1, "silent");
    dns.behave(NS2, "silent");
    try {
      const first = await check(p.id);
      expect(first).toMatchObject({ status: "verified", verified: true, last_check: { passed: false, reason: "unreachable" } });
      expect((await check(p.id)).status).toBe("verified");
      // one answer in between: the streak starts again
      dns.behave(NS1, "answer");
      dns.behave(NS2, "answer");
      expect((await check(p.id)).last_check.passed).toBe(true);
      dns.behave(NS1, "silent");
      dns.behave(NS2, "silent");
      expect((await check(p.id)).status).toBe("verified");
      expect((await check(p.id)).status).toBe("verified");
      expect((await validate(p.token)).body.valid).toBe(true);
      const third = await check(p.id);
      expect(third).toMatchObject({ status: "suspended", reason: "unreachable", last_check: { reason: "unreachable" } });
    } finally {
      dns.behave(NS1, "answer");
      dns.behave(NS2, "answer");
    }
    expect((await check(p.id)).status).toBe("verified");
  });

  it("one of two servers timing out does not suspend: the other answered with the record", async () => {
    const p = await verified();
    dns.behave(NS2, "silent");
    try {
      for (let i = 0; i < 3; i++) expect(await check(p.id)).toMatchObject({ status: "verified", last_check: { passed: true } });
    } finally {
      dns.behave(NS2, "answer");
    }
  });

  it("never re-checks a revoked proof: revoked stays revoked", async () => {
    const p = await verified();
    expect((await live().post(`/api/v1/proofs/${p.id}/revoke`, { reason: "asset_transferred" })).status).toBe(200);
    dns.removeTxt(p.record.name, p.record.value);
    clock.advance(5_000);
    expectError(await live().post(`/api/v1/verifications/domain/${p.id}/check`), 409, "invalid_state");
    expect((await live().get(`/api/v1/proofs/${p.id}/status`)).body).toMatchObject({ status: "revoked", is_revoked: true });
  });
});

describe("the owner's _icv policy", () => {
  const issuerOf = (token: string) => decodeJwt(token).iss as string;

  it("a policy naming another issuer refuses the check, and suspends a verified proof at its next re-check", async () => {
    const p = await verified();
    dns.addTxt(`_icv.${p.domain}`, "v=icv1; issuer=https://another-verifier.example");
    const c = await check(p.id);
    expect(c).toMatchObject({ status: "suspended", reason: "policy_refused", last_check: { passed: false, reason: "policy_refused" } });
    expect(c.last_check.summary).toMatch(/policy/);
    const policy = c.last_check.found.filter((f: any) => f.source.startsWith(`_icv.${p.domain}`));
    expect(policy).toHaveLength(2);
    expect(policy[0]).toMatchObject({ values: ["v=icv1; issuer=https://another-verifier.example"], matched: false });
    expect((await validate(p.token)).body).toMatchObject({ valid: false, reason: "suspended" });

    // a pending one is refused as well: it is not verified
    const domain = zone();
    dns.addTxt(`_icv.${domain}`, "v=icv1; issuer=https://another-verifier.example");
    const d = (await live().post("/api/v1/verifications/domain", { domain })).body;
    dns.addTxt(d.dns_record.name, d.dns_record.value);
    expect(await check(d.id)).toMatchObject({ status: "pending", verified: false, last_check: { reason: "policy_refused" } });
  });

  it("a policy naming this issuer and this tenant passes; naming another tenant refuses", async () => {
    const p = await verified();
    const iss = issuerOf(p.token);
    dns.addTxt(`_icv.${p.domain}`, `v=icv1; issuer=${iss}; tenant=${t.tenantId}`);
    const ok = await check(p.id);
    expect(ok).toMatchObject({ status: "verified", last_check: { passed: true } });
    expect(ok.last_check.found.find((f: any) => f.source.startsWith("_icv."))).toMatchObject({ matched: true });

    dns.remove(`_icv.${p.domain}`);
    dns.addTxt(`_icv.${p.domain}`, `v=icv1; issuer=${iss}; tenant=ten_someoneelse0000000000000`);
    expect(await check(p.id)).toMatchObject({ status: "suspended", reason: "policy_refused" });
    // one record of several naming us (no tenant: any tenant of this issuer) is enough
    dns.addTxt(`_icv.${p.domain}`, `v=icv1; issuer=${iss}`);
    expect(await check(p.id)).toMatchObject({ status: "verified" });
  });

  it("a malformed policy record is ignored and reported; it does not fail the check", async () => {
    const p = await verified();
    dns.addTxt(`_icv.${p.domain}`, "v=icv1; issuer");
    dns.addTxt(`_icv.${p.domain}`, "some other text");
    const c = await check(p.id);
    expect(c).toMatchObject({ status: "verified", last_check: { passed: true } });
    const policy = c.last_check.found.find((f: any) => f.source.startsWith("_icv."));
    expect(policy).toMatchObject({ values: ["v=icv1; issuer"], matched: false, error: expect.stringMatching(/malformed/) });
  });
});

describe("the hosted page", () => {
  it("a verified domain asset shows when control was last re-checked and what that check saw", async () => {
    const domain = zone();
    const r = await live().post("/api/v1/verification-requests", { assets: [{ type: "domain", identifier: domain, channel: "dns" }] });
    expect(r.status, r.text).toBe(201);
    const token = new URL(r.body.verification_url).hash.slice(1);
    const view = async () => (await api(stack.url).get(`/api/v1/verify/request/${r.body.id}`, { "x-request-token": token })).body.assets[0];
    const open = await view();
    dns.addTxt(open.domain.dns_record.name, open.domain.dns_record.value);
    expect((await check(open.verification_id)).status).toBe("verified");
    const done = await waitFor(async () => {
      const a = await view();
      return a.status === "verified" ? a : undefined;
    }, 5000);
    expect(done.domain).toMatchObject({ check_count: 1, last_check: { passed: true } });

    dns.removeTxt(open.domain.dns_record.name, open.domain.dns_record.value, NS1);
    expect((await check(open.verification_id)).status).toBe("suspended");
    const after = await view();
    expect(after.domain).toMatchObject({ check_count: 2, last_check: { passed: false, reason: "record_missing", checked_at: expect.any(String) } });
    expect(after.domain.last_check.summary).toMatch(/not on every authoritative server/);
  });
});

describe("recheck_interval", () => {
  it("is refused below RECHECK_MIN_INTERVAL_S, as a fraction or not a number, and on a create that cannot take it; the message names the minimum", async () => {
    for (const bad of [59, 3599, 3600.5, -1]) {
      const r = await live().post("/api/v1/verifications/domain", { domain: zone(), recheck_interval: bad });
      expectError(r, 400, "validation_error");
      expect(r.body.error.message).toMatch(/3600/);
    }
    expectError(await live().post("/api/v1/verifications/domain", { domain: zone(), recheck_interval: "3600" }), 400, "validation_error");
    const phone = await live().post("/api/v1/verifications", { type: "phone", channel: "telegram", identifier: "+37069200001", recheck_interval: 3600 });
    expectError(phone, 400, "validation_error");
    const ok = await live().post("/api/v1/verifications/domain", { domain: zone(), recheck_interval: 3600 });
    expect(ok.status, ok.text).toBe(201);
    expect(ok.body.recheck_interval).toBe(3600);
  });
});

describe("an expired proof", () => {
  it("is not re-checked (invalid_state) and stays as it was", async () => {
    const p = await verified();
    clock.advance(31 * 24 * 3600_000);
    expectError(await live().post(`/api/v1/verifications/domain/${p.id}/check`), 409, "invalid_state");
    expect((await validate(p.token)).body).toMatchObject({ valid: false, reason: "expired" });
  });
});
