// The console's verification timeline doubles as its re-check history: a suspension and a
// reinstatement by a domain re-check show with their reason, in the order they happened.
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Request } from "express";
import { describe, expect, it } from "vitest";
import type { Clients } from "../src/clients.ts";
import { timelineRoute } from "../src/console/timeline.ts";

describe("the console timeline of a verification", () => {
  it("shows each re-check's suspension and reinstatement with its reason, and asks only for the session's tenant", async () => {
    const asked: unknown[] = [];
    const at = (s: number) => timestampFromDate(new Date(Date.UTC(2026, 10, 26, 12, 0, s)));
    const clients = {
      verification: {
        async listVerificationEvents(req: unknown) {
          asked.push(req);
          return {
            status: "verified",
            events: [
              { id: "evt_1", eventType: "verification.completed", payload: { status: "verified", previousStatus: "pending" }, createdAt: at(0) },
              { id: "evt_2", eventType: "verification.suspended", payload: { status: "suspended", reason: "record_missing" }, createdAt: at(1) },
              { id: "evt_3", eventType: "verification.reinstated", payload: { status: "verified", reason: "" }, createdAt: at(2) },
            ],
          };
        },
      },
    } as unknown as Clients;
    const req = { scope: { tenantId: "ten_A", env: "live" }, requestId: "req_1" } as unknown as Request;
    const out = await timelineRoute(clients).handler!({ req, res: undefined as never, body: undefined, query: undefined, params: { id: "ver_1" } });
    const data = (out.body as { data: Array<Record<string, unknown>> }).data;
    expect(data.map((e) => [e.event_type, e.status, e.reason])).toEqual([
      ["verification.completed", "verified", null],
      ["verification.suspended", "suspended", "record_missing"],
      ["verification.reinstated", "verified", null],
    ]);
    expect(data[1].at).toBe("2026-11-26T12:00:01.000Z");
    expect(asked).toEqual([expect.objectContaining({ verificationId: "ver_1", scope: expect.objectContaining({ tenantId: "ten_A" }) })]);
  });
});
