// Scheduled re-checks (issue 27) through the public API against the local authoritative DNS pair,
// on the real clock: a domain created with recheck_interval is re-checked by the sweeper with no
// call; its record leaving one of the two servers suspends the proof, putting it back reinstates
// it, and the tenant's webhooks and the event stream say so in that order. Two replicas sharing the schedule: services/verification/test/rechecks.test.ts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { domainCheckEnv } from "../support/domain-env.ts";
import { startDnsZones, type DnsZones } from "../support/dns-server.ts";
import { waitFor } from "../support/expect-error.ts";
import { startReceiver, type Receiver } from "../support/receiver.ts";
import { api } from "../support/stack.ts";
import { useStack, useTenant } from "../support/use-stack.ts";

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

const stack = useStack(() => ({
  ...domainCheckEnv({ dns }),
  DNS_QUERY_TIMEOUT_MS: "1000",
  ALLOW_PRIVATE_TARGETS: "true",
  RECHECK_MIN_INTERVAL_S: "1",
  RECHECK_SWEEP_MS: "200",
}));
const t = useTenant(stack, "Scheduled re-checks");
beforeAll(async () => {
  await stack.admin.setWebhookEndpoint({ tenantId: t.tenantId, environment: Environment.LIVE, url: rx.url }, { headers: stack.adminHeaders });
});

const live = () => api(stack.url, t.liveKey);
const events = (id: string, path?: string) =>
  rx.requests
    .filter((r) => path === undefined || r.path === path)
    .map((r) => JSON.parse(r.body) as { event: string; verification_id?: string; reason?: string })
    .filter((b) => b.verification_id === id && b.event !== "verification.status_changed")
    .map((b) => b.event);

describe("a domain with recheck_interval", () => {
  it("is re-checked without a call: suspended when the record leaves one server, reinstated when it is back; webhooks and the stream in that order", async () => {
    const domain = "scheduled.example.test";
    dns.zone(domain, [NS1, NS2]);
    const created = await live().post("/api/v1/verifications/domain", { domain, recheck_interval: 1 });
    expect(created.status, created.text).toBe(201);
    expect(created.body.recheck_interval).toBe(1);
    const d = created.body;
    dns.addTxt(d.dns_record.name, d.dns_record.value);
    const first = await live().post(`/api/v1/verifications/domain/${d.id}/check`);
    expect(first.body).toMatchObject({ status: "verified", recheck_interval: 1, next_recheck_at: expect.any(String) });
    const stream = await fetch(`${stack.url}/api/v1/verifications/${d.id}/events`, { headers: { authorization: `Bearer ${t.liveKey}` } });
    const reader = stream.body!.getReader();
    try {
      // the sweeper re-checks it on its own (a passing one changes nothing)
      const asked = () => dns.queries.filter((q) => q.name === d.dns_record.name && q.server === NS2).length;
      const once = asked();
      expect(await waitFor(async () => asked() > once, 8000)).toBe(true);
      expect((await live().get(`/api/v1/verifications/${d.id}`)).body.status).toBe("verified");

      dns.removeTxt(d.dns_record.name, d.dns_record.value, NS2);
      const suspended = await waitFor(async () => {
        const v = (await live().get(`/api/v1/verifications/${d.id}`)).body;
        return v.status === "suspended" ? v : undefined;
      }, 8000);
      expect(suspended).toMatchObject({ status: "suspended", suspended_reason: "record_missing" });
      expect((await live().post("/api/v1/proofs/validate", { proof_token: suspended.proof.token })).body).toMatchObject({ valid: false, reason: "suspended" });

      dns.addTxt(d.dns_record.name, d.dns_record.value, NS2);
      expect(await waitFor(async () => (await live().get(`/api/v1/verifications/${d.id}`)).body.status === "verified", 8000)).toBe(true);
      expect(await waitFor(async () => events(d.id).includes("verification.reinstated"), 5000)).toBe(true);
      expect(events(d.id)).toEqual(["verification.completed", "verification.suspended", "verification.reinstated"]);

      let text = "";
      const decoder = new TextDecoder();
      while (!/"status":"verified","previous_status":"suspended"/.test(text)) text += decoder.decode((await reader.read()).value);
      expect(text).toMatch(/"status":"suspended","previous_status":"verified"[^}]*"suspended_reason":"record_missing"/);
    } finally {
      await reader.cancel();
    }
  });
});
