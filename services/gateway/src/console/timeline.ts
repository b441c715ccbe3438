import { iso } from "@icv/platform";
import { scopeOf, type Clients } from "../clients.ts";
import { idParams } from "../input.ts";
import { route, type RouteDef } from "../registry.ts";

/**
 * `/console/api/{env}/verifications/{id}/timeline`: the verification's events, oldest first (the
 * SSE stream's replay as one answer; a verification has a handful). Another tenant's is not_found.
 * A suspension or reinstatement by a domain re-check carries its reason (`record_missing`, …), so
 * the timeline is the verification's re-check history too.
 */
export function timelineRoute(c: Clients): RouteDef {
  return route({
    method: "get",
    path: "/verifications/{id}/timeline",
    tag: "Console",
    summary: "timeline",
    auth: "public",
    params: idParams("verification"),
    responses: {},
    async handler({ req, params }) {
      const r = await c.verification.listVerificationEvents({ scope: scopeOf(req), verificationId: params.id });
      const data = r.events.map((e) => {
        const p = (e.payload ?? {}) as Record<string, unknown>;
        return {
          id: e.id,
          event_type: e.eventType,
          status: typeof p.status === "string" ? p.status : null,
          previous_status: [p.previous_status, p.previousStatus].find((x): x is string => typeof x === "string") ?? null,
          reason: typeof p.reason === "string" && p.reason ? p.reason : null,
          at: iso(e.createdAt) ?? null,
        };
      });
      return { body: { data, status: r.status } };
    },
  });
}
