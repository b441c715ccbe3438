import { z } from "zod";
import { scopeOf, type Clients } from "../clients.ts";
import { idParams } from "../input.ts";
import { route, type RouteDef } from "../registry.ts";
import { ErrorBody } from "../schemas.ts";
import type { SseHub } from "../sse/hub.ts";

const err = (description: string) => ({ description, schema: ErrorBody });

// EventSource polyfills that cannot set headers send the last id as a query parameter
const EventsQuery = z.object({ lastEventId: z.string().max(64).optional() });

const DESCRIPTION = `A text/event-stream of one verification. First \`connected\` (data \`{verification_id, status}\`,
its id the newest event of the verification), then \`status_changed\` on every status move (data
\`{verification_id, status, previous_status, changed_at}\` plus \`verified_at\` and \`proof\` when verified,
\`revoked_at\` and \`revoked_reason\` when revoked). Every event has an \`id\`; reconnect with the
\`Last-Event-ID\` header (or \`?lastEventId=\`) to receive the status changes missed since. A
\`: heartbeat\` comment comes every 30 s. The stream ends after \`failed\`, \`expired\` or \`revoked\`; a
reconnect after that answers 204. At most SSE_MAX_CONNECTIONS_PER_TENANT (10) open streams per tenant.`;

/** GET /verifications/{id}/events; mounted only when the gateway runs an SSE hub (documented either way). */
export function verificationEventRoutes(c: Clients, sse?: SseHub): RouteDef[] {
  return [
    route({
      method: "get",
      path: "/api/v1/verifications/{id}/events",
      tag: "Verifications",
      summary: "Server-sent events of one verification: connected, then status_changed",
      description: DESCRIPTION,
      auth: "key",
      params: idParams("verification"),
      query: EventsQuery,
      responses: {
        200: { description: "text/event-stream: connected, status_changed…", contentType: "text/event-stream" },
        204: { description: "Reconnect after the stream ended (a terminal status was already sent): stop" },
        400: err("validation_error (a malformed Last-Event-ID)"),
        404: err("not_found"),
        429: err("too_many_connections (the tenant's streams are all open) or rate_limited"),
      },
      handler: sse
        ? async ({ req, res, params, query }) => {
            const scope = scopeOf(req);
            await sse.open({
              req,
              res,
              tenantId: scope.tenantId,
              verificationId: params.id,
              lastEventId: req.get("last-event-id") || query.lastEventId || undefined,
              async read(after) {
                const r = await c.verification.listVerificationEvents({ scope, verificationId: params.id, afterEventId: after });
                return {
                  status: r.status,
                  lastEventId: r.lastEventId,
                  events: r.events.map((e) => ({ id: e.id, eventType: e.eventType, payload: e.payload ?? {} })),
                };
              },
            });
            return {};
          }
        : undefined,
    }),
  ];
}
