import type { EventRecord } from "@icv/platform";

/** The event types that are sent as webhooks (the spec's table). Every other event is ignored. */
export const WEBHOOK_EVENT_TYPES = [
  "verification.completed",
  "verification_request.completed",
  "verification_request.partial",
  "verification_request.expired",
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** The event families the webhook consumer reads. */
export const WEBHOOK_TOPICS = ["verification", "verification_request"];

export const isWebhookEvent = (eventType: string): eventType is WebhookEventType => (WEBHOOK_EVENT_TYPES as readonly string[]).includes(eventType);

const ENVELOPE = new Set(["id", "event", "test", "created_at", "callback_url"]);

/**
 * The webhook body of an event: `{id, event, test, created_at, ...payload}` without the
 * payload's callback_url (a routing detail, not news for the receiver). Serialized once: these
 * exact bytes are stored, signed and sent on every attempt.
 */
export function webhookBody(event: EventRecord): string {
  const rest = Object.fromEntries(Object.entries(event.payload).filter(([k]) => !ENVELOPE.has(k)));
  return JSON.stringify({ id: event.id, event: event.eventType, test: event.environment === "test", created_at: event.createdAt.toISOString(), ...rest });
}

export interface PlannedDelivery {
  tenantId: string;
  environment: "live" | "test";
  eventId: string;
  eventType: string;
  url: string;
  verificationRequestId: string | null;
  verificationId: string | null;
  payload: string;
}

const str = (v: unknown): string | null => (typeof v === "string" && v ? v : null);

/**
 * The deliveries one event makes: to the tenant's endpoint of its environment (when set) and to
 * the payload's callback_url (when present); one per distinct URL.
 */
export function plannedDeliveries(event: EventRecord, endpointUrl: string | undefined): PlannedDelivery[] {
  if (!isWebhookEvent(event.eventType)) return [];
  const urls = [...new Set([endpointUrl, str(event.payload.callback_url)].filter((u): u is string => !!u))];
  if (!urls.length) return [];
  const payload = webhookBody(event);
  return urls.map((url) => ({
    tenantId: event.tenantId,
    environment: event.environment,
    eventId: event.id,
    eventType: event.eventType,
    url,
    verificationRequestId: str(event.payload.request_id),
    verificationId: str(event.payload.verification_id),
    payload,
  }));
}
