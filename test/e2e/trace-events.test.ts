// The work a request causes after it was answered, in the request's trace: its events carry the
// traceparent of the span that wrote them through the outbox, so the relay's publish, the webhook
// consumer's planning and the webhook's POST to the tenant's endpoint are spans of that trace (or,
// for a batch that mixes requests, linked to it). Every service here writes its outbox with the
// traceparent column (a template copy of the first start included): a schema without it would
// fail these requests.
import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { SpanKind, startTracing, type Tracing } from "@icv/platform";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../support/expect-error.ts";
import { startReceiver, type Receiver } from "../support/receiver.ts";
import { api, startStack, type Stack } from "../support/stack.ts";

const exporter = new InMemorySpanExporter();
let tracing: Tracing | undefined;
let stack: Stack;
let rx: Receiver;
let tenantId: string;
let testKey: string;
let verificationId: string;

beforeAll(async () => {
  tracing = await startTracing({ serviceName: "icv-test", exporter });
  stack = await startStack({ ALLOW_PRIVATE_TARGETS: "true" });
  rx = await startReceiver(200);
  const r = await stack.admin.createTenant({ name: "Traced events" }, { headers: stack.adminHeaders });
  tenantId = r.tenant!.id;
  testKey = r.testKey;
  await stack.admin.setWebhookEndpoint({ tenantId, environment: Environment.TEST, url: rx.url }, { headers: stack.adminHeaders });
  const c = api(stack.url, testKey);
  const created = await c.post("/api/v1/verifications", { type: "phone", channel: "telegram", identifier: "+370 691 99188" });
  expect(created.status).toBe(201);
  verificationId = created.body.id;
  expect((await c.post(`/api/v1/verifications/${verificationId}/test-verify`)).status).toBe(200);
  await rx.waitFor(1, 15_000);
});
afterAll(async () => {
  await stack?.close();
  await rx?.close();
  await tracing?.shutdown();
});

describe("traces through the event pipeline", () => {
  it("follow test-verify from the gateway through the outbox relay and the webhook consumer to the webhook's POST", async () => {
    // the attempt's span ends once the receiver answered
    const post = await waitFor(async () => exporter.getFinishedSpans().find((s) => s.name === "POST" && s.kind === SpanKind.CLIENT), 10_000);
    const spans = exporter.getFinishedSpans();
    const names = () => spans.map((s) => s.name).join(", ");
    const root = spans.find((s) => s.name === "POST /api/v1/verifications/:id/test-verify");
    expect(root, names()).toBeDefined();
    const traceId = root!.spanContext().traceId;
    const byId = new Map(spans.filter((s) => s.spanContext().traceId === traceId).map((s) => [s.spanContext().spanId, s]));
    const ancestors = (s: ReadableSpan) => {
      const out: string[] = [];
      for (let p = byId.get(s.parentSpanContext?.spanId ?? ""); p; p = byId.get(p.parentSpanContext?.spanId ?? "")) out.push(p.name);
      return out;
    };
    /** In the request's trace, or (a batch that also held another request's events) linked to it. */
    const ofRequest = (s: ReadableSpan) => s.spanContext().traceId === traceId || s.links.some((l) => l.context.traceId === traceId);

    // the webhook's POST: a client span of the request's trace, under the span that wrote the event
    expect(post, names()).toBeDefined();
    expect(post!.spanContext().traceId).toBe(traceId);
    expect(post!.attributes).toMatchObject({ "http.request.method": "POST", "http.response.status_code": 200, "icv.webhook.attempt": 1 });
    expect(ancestors(post!)[0]).toMatch(/^verification VerificationService\//);
    expect(ancestors(post!)).toContain(root!.name);

    // the relay that published the verification service's outbox
    const publish = spans.filter((s) => s.name === "publish verification.outbox" && ofRequest(s));
    expect(publish.length, names()).toBeGreaterThan(0);
    expect(publish[0].kind).toBe(SpanKind.PRODUCER);
    expect(publish[0].attributes["messaging.system"]).toBe("postgresql");

    // the webhook consumer's planning of the delivery, with its SQL under it
    const planned = spans.filter((s) => s.name === "process webhook-deliveries" && ofRequest(s));
    expect(planned.length, names()).toBeGreaterThan(0);
    expect(planned[0].kind).toBe(SpanKind.CONSUMER);
    const planIds = new Set(planned.map((s) => s.spanContext().spanId));
    expect(spans.some((s) => s.attributes["db.system.name"] === "postgresql" && planIds.has(s.parentSpanContext?.spanId ?? ""))).toBe(true);
    // a batch of this request's events only is a child in its trace
    for (const s of [...publish, ...planned]) {
      if (s.spanContext().traceId === traceId) expect(ancestors(s)).toContain(root!.name);
    }

    // the other consumers of the verification events: the SSE hub and the caches (broadcast); the
    // request state machine passes this verification over (it drives no request: ConsumerOptions.relevant)
    expect(
      spans.some((s) => s.name === "process verification-requests" && ofRequest(s)),
      names(),
    ).toBe(false);
    expect(
      spans.some((s) => s.name === "process verification broadcast" && s.spanContext().traceId === traceId),
      names(),
    ).toBe(true);

    // no span of the pipeline holds the tenant, the key, the identifier or the receiver's URL
    for (const s of [post!, ...publish, ...planned]) {
      const text = JSON.stringify(s.attributes) + s.name;
      for (const secret of [tenantId, testKey, "37069199188", rx.url]) expect(text).not.toContain(secret);
    }
  });
});
