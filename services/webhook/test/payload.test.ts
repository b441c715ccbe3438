import { describe, expect, it } from "vitest";
import type { EventRecord } from "@icv/platform";
import { hasCallbackUrl, plannedDeliveries, WEBHOOK_EVENT_TYPES, webhookBody } from "../src/payload.ts";

const completed = (over: Partial<EventRecord> = {}): EventRecord => ({
  id: "evt_01J00000000000000000000001",
  aggregateType: "verification",
  aggregateId: "ver_01J00000000000000000000001",
  eventType: "verification.completed",
  tenantId: "ten_01J00000000000000000000001",
  environment: "test",
  payload: {
    verification_id: "ver_01J00000000000000000000001",
    type: "phone",
    channel: "telegram",
    status: "verified",
    verified_at: "2026-03-01T12:00:00.000Z",
    external_user_id: "user-42",
    client_metadata: { a: 1 },
    proof: { token: "eyJ...", expires_at: "2026-03-31T12:00:00.000Z" },
  },
  createdAt: new Date("2026-03-01T12:00:00.123Z"),
  ...over,
});

const requestEvent = (eventType: string, callback?: string): EventRecord =>
  completed({
    aggregateType: "verification_request",
    aggregateId: "vreq_01J00000000000000000000001",
    eventType,
    environment: "live",
    payload: {
      request_id: "vreq_01J00000000000000000000001",
      reference_id: "order-7",
      status: "completed",
      proofs: [{ asset_index: 0, type: "email", verification_id: "ver_X", proof_token: "t", expires_at: "2026-03-31T12:00:00.000Z" }],
      ...(callback ? { callback_url: callback } : {}),
    },
  });

describe("webhook body", () => {
  it("is {id, event, test, created_at, ...payload}, serialized in that order", () => {
    const body = webhookBody(completed());
    expect(
      body.startsWith('{"id":"evt_01J00000000000000000000001","event":"verification.completed","test":true,"created_at":"2026-03-01T12:00:00.123Z",'),
    ).toBe(true);
    expect(JSON.parse(body)).toEqual({
      id: "evt_01J00000000000000000000001",
      event: "verification.completed",
      test: true,
      created_at: "2026-03-01T12:00:00.123Z",
      ...completed().payload,
    });
  });

  it("says test: false for live events and leaves callback_url out", () => {
    const body = JSON.parse(webhookBody(requestEvent("verification_request.completed", "https://shop.example/cb")));
    expect(body.test).toBe(false);
    expect(body).not.toHaveProperty("callback_url");
    expect(body).toMatchObject({
      event: "verification_request.completed",
      request_id: "vreq_01J00000000000000000000001",
      status: "completed",
      proofs: [{ asset_index: 0 }],
    });
  });

  it("keeps the envelope when the payload has members of the same names", () => {
    const body = JSON.parse(webhookBody(completed({ payload: { id: "x", event: "y", test: "z", verification_id: "ver_1" } })));
    expect(body).toMatchObject({
      id: "evt_01J00000000000000000000001",
      event: "verification.completed",
      test: true,
      verification_id: "ver_1",
    });
  });
});

describe("delivery targets", () => {
  it("sends the spec's four webhook event types, a proof's suspension and reinstatement, and redactions, only", () => {
    expect(WEBHOOK_EVENT_TYPES).toEqual([
      "verification.completed",
      "verification.suspended",
      "verification.reinstated",
      "verification_request.completed",
      "verification_request.partial",
      "verification_request.expired",
      "verification.redacted",
    ]);
    expect(plannedDeliveries(completed({ eventType: "verification.status_changed" }), "https://a.example/")).toEqual([]);
    for (const t of WEBHOOK_EVENT_TYPES.slice(3, 6)) expect(plannedDeliveries(requestEvent(t), "https://a.example/")).toHaveLength(1);
    for (const t of ["verification.suspended", "verification.reinstated"]) {
      const [d] = plannedDeliveries(completed({ eventType: t }), "https://a.example/");
      expect(d).toMatchObject({ eventType: t, verificationId: "ver_01J00000000000000000000001", verificationRequestId: null });
    }
  });

  it("goes to the tenant endpoint and the request's callback_url, once per distinct URL", () => {
    const ev = requestEvent("verification_request.partial", "https://shop.example/cb");
    const both = plannedDeliveries(ev, "https://tenant.example/hook");
    expect(both.map((d) => d.url)).toEqual(["https://tenant.example/hook", "https://shop.example/cb"]);
    expect(both[0]).toMatchObject({
      eventId: ev.id,
      eventType: "verification_request.partial",
      environment: "live",
      verificationRequestId: "vreq_01J00000000000000000000001",
      verificationId: null,
    });
    expect(both[0].payload).toBe(both[1].payload);
    expect(plannedDeliveries(ev, "https://shop.example/cb")).toHaveLength(1);
    expect(plannedDeliveries(ev, undefined).map((d) => d.url)).toEqual(["https://shop.example/cb"]);
    expect(plannedDeliveries(completed(), undefined)).toEqual([]);
  });

  it("records the verification id of verification events", () => {
    expect(plannedDeliveries(completed(), "https://a.example/")[0]).toMatchObject({
      verificationId: "ver_01J00000000000000000000001",
      verificationRequestId: null,
    });
  });
});

describe("hasCallbackUrl (the consumer's filter for scopes without an endpoint)", () => {
  const withPayload = (eventType: string, payload: Record<string, unknown>) => completed({ eventType, payload: { ...completed().payload, ...payload } });

  it("sees the URL under the wire name and under the JSON name a producer may write", () => {
    expect(hasCallbackUrl(requestEvent("verification_request.completed", "https://shop.example/cb"))).toBe(true);
    expect(hasCallbackUrl(withPayload("verification.completed", { callback_url: "https://shop.example/v" }))).toBe(true);
    expect(hasCallbackUrl(withPayload("verification.completed", { callbackUrl: "https://shop.example/v" }))).toBe(true);
  });

  it("is false without a URL, with an empty or null one, and for an event that is never sent as a webhook", () => {
    expect(hasCallbackUrl(requestEvent("verification_request.completed"))).toBe(false);
    expect(hasCallbackUrl(withPayload("verification.completed", { callback_url: "" }))).toBe(false);
    expect(hasCallbackUrl(withPayload("verification.completed", { callback_url: null }))).toBe(false);
    expect(hasCallbackUrl(withPayload("verification.created", { callback_url: "https://shop.example/v" }))).toBe(false);
  });
});
