import type { Delivery } from "@icv/contracts/gen/icv/webhook/v1/webhook_service_pb.ts";
import { iso } from "@icv/platform";
import { scopeOf, type Clients } from "../clients.ts";
import { idParams } from "../input.ts";
import { route, type RouteDef } from "../registry.ts";
import {
  ErrorBody, ListWebhookDeliveriesQuery, WebhookDeliveryDetail, WebhookDeliveryList, WebhookDeliveryRetryResult, WebhookDeliveryStats, toPagination,
} from "../schemas.ts";

const err = (description: string) => ({ description, schema: ErrorBody });

/** RPC delivery → REST list item. */
function toListItem(d: Delivery) {
  return {
    id: d.id,
    verification_request_id: d.verificationRequestId ?? null,
    event_type: d.eventType,
    url: d.url,
    status: d.status,
    attempts: d.attempts,
    max_attempts: d.maxAttempts,
    response_status: d.responseStatus ?? null,
    created_at: iso(d.createdAt),
    updated_at: iso(d.updatedAt),
  };
}

/** RPC delivery → REST detail (the list item plus payload, headers, response and attempt log). */
function toDetail(d: Delivery) {
  return {
    ...toListItem(d),
    request_payload: JSON.parse(d.requestPayload) as unknown,
    request_headers: d.requestHeaders,
    response_body: d.responseBody ?? null,
    error_message: d.errorMessage ?? null,
    last_attempt_at: iso(d.lastAttemptAt) ?? null,
    next_retry_at: iso(d.nextRetryAt) ?? null,
    attempt_log: d.attemptLog.map((a) => ({
      attempt: a.attempt,
      at: iso(a.at),
      ...(a.status !== undefined ? { status: a.status } : {}),
      ...(a.error !== undefined ? { error: a.error } : {}),
      duration_ms: a.durationMs,
    })),
  };
}

export function webhookDeliveryRoutes(c: Clients): RouteDef[] {
  return [
    route({
      method: "get",
      path: "/api/v1/webhook-deliveries",
      tag: "Webhooks",
      summary: "List webhook deliveries, newest first",
      auth: "key",
      query: ListWebhookDeliveriesQuery,
      responses: { 200: { description: "A page of deliveries", schema: WebhookDeliveryList }, 400: err("validation_error") },
      async handler({ req, query }) {
        const r = await c.webhook.listDeliveries({
          scope: scopeOf(req),
          page: { page: query.page ?? 1, limit: query.limit ?? 20 },
          status: query.status,
          eventType: query.event_type,
          verificationRequestId: query.verification_request_id,
        });
        return { body: { data: r.deliveries.map(toListItem), pagination: toPagination(r.pageInfo!) } };
      },
    }),
    route({
      method: "get",
      path: "/api/v1/webhook-deliveries/stats",
      tag: "Webhooks",
      summary: "Delivery statistics",
      auth: "key",
      responses: { 200: { description: "Counts by status and the success rate", schema: WebhookDeliveryStats } },
      async handler({ req }) {
        const s = await c.webhook.getDeliveryStats({ scope: scopeOf(req) });
        const rate = s.total ? Math.round((s.delivered / s.total) * 10_000) / 100 : 0;
        return { body: { total: s.total, delivered: s.delivered, failed: s.failed, pending: s.pending, success_rate: rate } };
      },
    }),
    route({
      method: "get",
      path: "/api/v1/webhook-deliveries/{id}",
      tag: "Webhooks",
      summary: "One delivery with its payload, headers, response and attempt log",
      auth: "key",
      params: idParams("webhookDelivery"),
      responses: { 200: { description: "The delivery", schema: WebhookDeliveryDetail }, 404: err("not_found") },
      async handler({ req, params }) {
        const r = await c.webhook.getDelivery({ scope: scopeOf(req), id: params.id });
        return { body: toDetail(r.delivery!) };
      },
    }),
    route({
      method: "post",
      path: "/api/v1/webhook-deliveries/{id}/retry",
      tag: "Webhooks",
      summary: "Retry a failed delivery",
      description: "Back to pending with one more attempt allowed, sent at once.",
      auth: "key",
      params: idParams("webhookDelivery"),
      responses: {
        200: { description: "Queued again", schema: WebhookDeliveryRetryResult },
        404: err("not_found"),
        409: err("invalid_state: the delivery is not failed"),
      },
      async handler({ req, params }) {
        const r = await c.webhook.retryDelivery({ scope: scopeOf(req), id: params.id });
        return { body: { success: true, delivery: toDetail(r.delivery!) } };
      },
    }),
  ];
}
