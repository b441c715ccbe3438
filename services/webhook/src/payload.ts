import type { JsonObject } from "@bufbuild/protobuf";
import {
  decodeEvent,
  eventPayload,
  openEventMetadata,
  WEBHOOK_EVENT_TYPES,
  type EventMessage,
  type EventRecord,
  type PersonalData,
  type WebhookEventType,
} from "@icv/platform";

// the event types sent as webhooks (the spec's table; every other event is ignored): @icv/platform's vocabulary
export { WEBHOOK_EVENT_TYPES, type WebhookEventType };

/** The event families the webhook consumer reads. */
export const WEBHOOK_TOPICS = ["verification", "verification_request"];

export const isWebhookEvent = (eventType: string): eventType is WebhookEventType => (WEBHOOK_EVENT_TYPES as readonly string[]).includes(eventType);

/** A webhook event read as its icv.events.v1 message. */
type Webhook = { [T in WebhookEventType]: { type: T; message: EventMessage<T> } }[WebhookEventType];

const decode = (event: EventRecord & { eventType: WebhookEventType }) =>
  ({ type: event.eventType, message: decodeEvent(event.eventType, event.payload) }) as Webhook;

/** The request's or verification's own webhook URL, a routing detail rather than news for the receiver. */
const callbackUrl = (w: Webhook) => w.message.callbackUrl;

/**
 * A webhook event that names its own URL (a request's or verification's callback_url), read from
 * the payload's top-level member under either name fromJson accepts, without decoding the whole
 * event: the consumer asks this of every event of a scope without an endpoint.
 */
export const hasCallbackUrl = (event: EventRecord): boolean => {
  if (!isWebhookEvent(event.eventType)) return false;
  const url = event.payload.callback_url ?? event.payload.callbackUrl;
  return typeof url === "string" && url !== "";
};

/**
 * The message as the receiver gets it: client_metadata opened from the sealed form the outbox
 * keeps (an event stored before sealing carries it in clear), no sealed field, no callback_url.
 */
function delivered(w: Webhook, pd: PersonalData | undefined): EventMessage<WebhookEventType> {
  const m = { ...w.message, callbackUrl: undefined };
  if (!("sealedClientMetadata" in m) || m.sealedClientMetadata === undefined) return m;
  if (!pd) throw new Error("a webhook event with sealed client_metadata needs the data key");
  const opened = openEventMetadata(pd, m.verificationId, m.sealedClientMetadata);
  return { ...m, sealedClientMetadata: undefined, clientMetadata: opened as JsonObject | undefined };
}

/**
 * The body: `{id, event, test, created_at, ...message}` (the message as its payload's JSON,
 * without callback_url). Serialized once: these exact bytes are signed and sent on every attempt
 * (and stored sealed).
 */
function body(event: EventRecord, w: Webhook, pd: PersonalData | undefined): string {
  const payload = eventPayload<WebhookEventType>(w.type, delivered(w, pd));
  return JSON.stringify({
    id: event.id,
    event: event.eventType,
    test: event.environment === "test",
    created_at: event.createdAt.toISOString(),
    ...payload,
  });
}

/** The webhook body of a webhook event (`pd` opens its sealed client_metadata). */
export function webhookBody(event: EventRecord, pd?: PersonalData): string {
  if (!isWebhookEvent(event.eventType)) throw new Error(`${event.eventType} is not a webhook event`);
  return body(event, decode(event as EventRecord & { eventType: WebhookEventType }), pd);
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
  /** The event's traceparent (tracing on): each attempt's POST is a span of the event's trace. */
  traceparent?: string;
}

/**
 * The deliveries one event makes: to the tenant's endpoint of its environment (when set) and to
 * the request's or verification's callback_url (when present); one per distinct URL.
 */
export function plannedDeliveries(event: EventRecord, endpointUrl: string | undefined, pd?: PersonalData): PlannedDelivery[] {
  if (!isWebhookEvent(event.eventType)) return [];
  const w = decode(event as EventRecord & { eventType: WebhookEventType });
  const urls = [...new Set([endpointUrl, callbackUrl(w)].filter((u): u is string => !!u))];
  if (!urls.length) return [];
  const payload = body(event, w, pd);
  const ids =
    w.type === "verification.completed" || w.type === "verification.suspended" || w.type === "verification.reinstated" || w.type === "verification.redacted"
      ? { verificationRequestId: null, verificationId: w.message.verificationId || null }
      : { verificationRequestId: w.message.requestId || null, verificationId: null };
  return urls.map((url) => ({
    tenantId: event.tenantId,
    environment: event.environment,
    eventId: event.id,
    eventType: event.eventType,
    url,
    ...ids,
    payload,
    traceparent: event.traceparent,
  }));
}
