// Webhook operations a receiver and an operator rely on (issue 19), through the public API and
// the admin CLI with real local receivers: `webhook-delivery: abort-message` stops retries; a
// tenant endpoint failing every attempt for WEBHOOK_DISABLE_AFTER_MS (5 days; 1.5 s here) is
// disabled, gets nothing more, and comes back with `admin webhook enable`.
import { describe, expect, it } from "vitest";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { adminCli } from "../support/admin-cli.ts";
import { waitFor } from "../support/expect-error.ts";
import { startReceiver, type Answering } from "../support/receiver.ts";
import { api } from "../support/stack.ts";
import { useStack } from "../support/use-stack.ts";

const DISABLE_AFTER_MS = 1_500;
const stack = useStack({
  ALLOW_PRIVATE_TARGETS: "true",
  WEBHOOK_RETRY_DELAYS_MS: "200,200",
  WEBHOOK_DISABLE_AFTER_MS: String(DISABLE_AFTER_MS),
});

/** A tenant whose test endpoint is a fresh receiver answering `answer`. */
async function tenantWithReceiver(answer: Answering) {
  const rx = await startReceiver(answer);
  const t = await stack.tenant("Webhook ops");
  await stack.admin.setWebhookEndpoint({ tenantId: t.tenantId, environment: Environment.TEST, url: rx.url }, { headers: stack.adminHeaders });
  const c = api(stack.url, t.testKey);
  let n = 0;
  const verify = async () => {
    const v = await c.post("/api/v1/verifications", { type: "email", channel: "email", identifier: `ops-${n++}@example.com` });
    expect(v.status, v.text).toBe(201);
    expect((await c.post(`/api/v1/verifications/${v.body.id}/test-verify`)).status).toBe(200);
  };
  const deliveries = async () => (await c.get("/api/v1/webhook-deliveries?limit=100")).body.data as any[];
  const detail = async (id: string) => (await c.get(`/api/v1/webhook-deliveries/${id}`)).body;
  const settled = async (count: number): Promise<any[]> => {
    const done = await waitFor(async () => {
      const d = await deliveries();
      return d.length === count && d.every((x) => x.status !== "pending") ? d : undefined;
    }, 15_000);
    if (!done) throw new Error(`deliveries never settled: ${JSON.stringify(await deliveries())}`);
    return done;
  };
  return { rx, t, c, verify, deliveries, detail, settled };
}

describe("a receiver that answers webhook-delivery: abort-message", () => {
  it("gets one attempt; the delivery ends failed with the reason in its detail", async () => {
    const { rx, verify, detail, settled } = await tenantWithReceiver({
      status: 422,
      headers: { "webhook-delivery": "abort-message" },
      body: "unknown customer",
    });
    try {
      await verify();
      const [d] = await settled(1);
      await new Promise((r) => setTimeout(r, 600)); // two retries would have come by now
      expect(rx.requests).toHaveLength(1);
      expect(d).toMatchObject({ status: "failed", attempts: 1, max_attempts: 3, response_status: 422 });
      const full = await detail(d.id);
      const reason = "the receiver asked not to retry (webhook-delivery: abort-message)";
      expect(full).toMatchObject({ error_message: `HTTP 422; ${reason}`, response_body: "unknown customer", next_retry_at: null });
      expect(full.attempt_log).toEqual([
        { attempt: 1, at: full.last_attempt_at, status: 422, error: `HTTP 422; ${reason}`, duration_ms: expect.any(Number) },
        { event: "attempt.exhausted", attempt: 1, at: full.last_attempt_at, reason, duration_ms: 0 },
      ]);
    } finally {
      await rx.close();
    }
  });
});

describe("an endpoint that fails every attempt", () => {
  it("is disabled after WEBHOOK_DISABLE_AFTER_MS: logged, shown to the operator, sent nothing more until enabled", async () => {
    const { rx, t, verify, deliveries, detail, settled } = await tenantWithReceiver(500);
    try {
      await verify();
      await settled(1);
      const before = (await stack.admin.getWebhookSettings({ tenantId: t.tenantId }, { headers: stack.adminHeaders })).test!;
      expect(before.failingSince).toBeDefined();
      expect(before.disabledAt).toBeUndefined();
      await new Promise((r) => setTimeout(r, DISABLE_AFTER_MS));
      // the first failure after the streak passed the limit disables the endpoint
      await verify();
      const all = await settled(2);
      const last = await detail(all[0].id);
      const disabled = last.attempt_log.find((e: any) => e.event === "endpoint.disabled");
      expect(disabled).toMatchObject({ reason: expect.stringMatching(/^every attempt failed since /) });
      expect(last.status).toBe("failed");
      const shown = await adminCli(stack, "webhook", "show", "--tenant", t.tenantId);
      expect(shown.test).toMatchObject({ url: rx.url, disabled_at: disabled.at, disabled_reason: disabled.reason });

      // no more deliveries to it: a new event makes none, the receiver hears nothing
      const heard = rx.requests.length;
      await verify();
      await new Promise((r) => setTimeout(r, 800));
      expect(await deliveries()).toHaveLength(2);
      expect(rx.requests).toHaveLength(heard);

      // the operator enables it: the next event is delivered
      rx.answer(200);
      const enabled = await adminCli(stack, "webhook", "enable", "--tenant", t.tenantId, "--env", "test");
      expect(enabled).toMatchObject({ environment: "test", url: rx.url, disabled_at: null, failing_since: null, disabled_reason: null });
      await verify();
      const after = await settled(3);
      expect(after[0]).toMatchObject({ status: "delivered", attempts: 1 });
    } finally {
      await rx.close();
    }
  }, 90_000); // two admin CLI runs (a tsx start each)

  it("enable answers 404 for a tenant environment without an endpoint", async () => {
    const t = await stack.tenant("No endpoint");
    await expect(adminCli(stack, "webhook", "enable", "--tenant", t.tenantId, "--env", "live")).rejects.toThrow(/no webhook endpoint is set/);
  }, 60_000);
});
