import { z } from "zod";
import type { Delivery } from "@icv/contracts/gen/icv/webhook/v1/webhook_service_pb.ts";
import { iso, TEST_WEBHOOK_EVENT, WEBHOOK_EVENT_TYPES } from "@icv/platform";
import { scopeOf, type Clients } from "../clients.ts";
import { idOf, idParams } from "../input.ts";
import { route, type RouteDef } from "../registry.ts";
import { ErrorBody, jsonObject, PageQuery, Pagination, timestamp, toPagination } from "../schemas.ts";

export const DELIVERY_STATUSES = ["pending", "delivered", "failed"] as const;
/** What a delivery carries: a webhook event, or the test event a tenant sends to its own endpoint. */
export const DELIVERED_EVENTS = [...WEBHOOK_EVENT_TYPES, TEST_WEBHOOK_EVENT] as const;

const WebhookDelivery = z
  .object({
    id: z.string(),
    verification_request_id: z.string().nullable().describe("The verification request the event belongs to (request events)"),
    event_type: z.enum(DELIVERED_EVENTS),
    url: z.string(),
    status: z.enum(DELIVERY_STATUSES),
    attempts: z.number().int(),
    max_attempts: z.number().int(),
    response_status: z.number().int().nullable().describe("HTTP status of the last attempt's response; null before one came"),
    error_message: z.string().nullable().describe("Why the last attempt failed; null when it did not"),
    last_attempt_at: timestamp.nullable(),
    next_retry_at: timestamp.nullable().describe("When the next attempt is due (pending only)"),
    delivered_at: timestamp.nullable().describe("When it was delivered (the last attempt's time); null unless delivered"),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: "WebhookDelivery" });

const WebhookAttempt = z
  .object({
    attempt: z.number().int(),
    at: timestamp,
    status: z.number().int().optional().describe("HTTP status, when a response came"),
    error: z.string().optional(),
    duration_ms: z.number().int(),
    event: z
      .enum(["attempt.exhausted", "endpoint.disabled"])
      .optional()
      .describe("Absent for an attempt. attempt.exhausted: the delivery ended failed; endpoint.disabled: its endpoint was disabled (failing for 5 days)"),
    reason: z.string().optional().describe("Why (with event)"),
  })
  .meta({ id: "WebhookAttempt" });

const WebhookDeliveryDetail = WebhookDelivery.extend({
  request_payload: jsonObject.describe("The body sent (parsed); the raw bytes are what X-Service-Signature signs"),
  request_headers: z.record(z.string(), z.string()).describe("Headers of the last attempt (signatures included)"),
  response_body: z.string().nullable().describe("First 4 KB of the last response"),
  attempt_log: z.array(WebhookAttempt),
}).meta({ id: "WebhookDeliveryDetail" });

// deliveries and pagination.total_pages: the same values under the reference SDKs' names (DECISIONS.md "Compatibility")
const WebhookDeliveryList = z
  .object({
    data: z.array(WebhookDelivery),
    deliveries: z.array(WebhookDelivery).describe("The same items as data"),
    pagination: Pagination.extend({ total_pages: z.number().int().describe("The same as pages") }),
  })
  .meta({ id: "WebhookDeliveryList" });

const WebhookDeliveryStats = z
  .object({
    total: z.number().int(),
    delivered: z.number().int(),
    failed: z.number().int(),
    pending: z.number().int(),
    success_rate: z.number().describe("delivered / total × 100, two decimals; 0 when total is 0"),
    by_status: z.object({ pending: z.number().int(), delivered: z.number().int(), failed: z.number().int() }).describe("The counts by status"),
    delivery_rate: z.string().describe('success_rate as a string with two decimals ("97.50")'),
    recent_failures_24h: z.number().int().describe("Deliveries that failed in the last 24 hours"),
  })
  .meta({ id: "WebhookDeliveryStats" });

const WebhookDeliveryRetryResult = z
  .object({
    success: z.literal(true),
    delivery: WebhookDeliveryDetail,
    delivery_id: z.string().describe("The same as delivery.id"),
    message: z.string(),
    next_retry_at: timestamp.nullable().describe("The same as delivery.next_retry_at: when the attempt is due (at once)"),
  })
  .meta({ id: "WebhookDeliveryRetryResult" });

const ListWebhookDeliveriesQuery = z
  .object({
    ...PageQuery,
    status: z.enum(DELIVERY_STATUSES).optional(),
    event_type: z
      .string()
      .max(64)
      .meta({ enum: [...DELIVERED_EVENTS] })
      .optional(),
    verification_request_id: idOf("verificationRequest").optional(),
  })
  .strict();

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
    error_message: d.errorMessage ?? null,
    last_attempt_at: iso(d.lastAttemptAt) ?? null,
    next_retry_at: iso(d.nextRetryAt) ?? null,
    delivered_at: d.status === "delivered" ? (iso(d.lastAttemptAt) ?? null) : null,
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
    attempt_log: d.attemptLog.map((a) => ({
      attempt: a.attempt,
      at: iso(a.at),
      ...(a.status !== undefined ? { status: a.status } : {}),
      ...(a.error !== undefined ? { error: a.error } : {}),
      duration_ms: a.durationMs,
      ...(a.event ? { event: a.event as "attempt.exhausted" | "endpoint.disabled" } : {}),
      ...(a.reason !== undefined ? { reason: a.reason } : {}),
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
      description:
        "The delivery log of the key's tenant and environment: each event sent (or being sent) to the webhook endpoint or a verification's callback_url, with its status and attempts; filter by status, event_type or verification_request_id. The answer also carries the reference SDKs' names (deliveries, pagination.total_pages).",
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
        const data = r.deliveries.map(toListItem);
        return { body: { data, deliveries: data, pagination: { ...toPagination(r.pageInfo!), total_pages: r.pageInfo!.pages } } };
      },
    }),
    route({
      method: "get",
      path: "/api/v1/webhook-deliveries/stats",
      tag: "Webhooks",
      summary: "Delivery statistics",
      description:
        "Counts of the key's tenant's deliveries in the key's environment by status and the success rate, with the reference SDKs' by_status, delivery_rate and recent_failures_24h beside them.",
      auth: "key",
      responses: { 200: { description: "Counts by status and the success rate", schema: WebhookDeliveryStats } },
      async handler({ req }) {
        const s = await c.webhook.getDeliveryStats({ scope: scopeOf(req) });
        const rate = s.total ? Math.round((s.delivered / s.total) * 10_000) / 100 : 0;
        return {
          body: {
            total: s.total,
            delivered: s.delivered,
            failed: s.failed,
            pending: s.pending,
            success_rate: rate,
            by_status: { pending: s.pending, delivered: s.delivered, failed: s.failed },
            delivery_rate: rate.toFixed(2),
            recent_failures_24h: s.recentFailures24h,
          },
        };
      },
    }),
    route({
      method: "get",
      path: "/api/v1/webhook-deliveries/{id}",
      tag: "Webhooks",
      summary: "One delivery with its payload, headers, response and attempt log",
      description:
        "The delivery's body as sent, the last attempt's headers (signatures included) and response, and every attempt with its time, status and duration.",
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
        const delivery = toDetail(r.delivery!);
        return {
          body: { success: true, delivery, delivery_id: delivery.id, message: "queued for another attempt", next_retry_at: delivery.next_retry_at },
        };
      },
    }),
  ];
}
