import type { Attributes } from "@opentelemetry/api";
import { inMessagesSpan, SpanKind } from "../tracing.ts";
import type { EventRecord } from "./event-log.ts";

/** The event transport, as OpenTelemetry's `messaging.system` names it. */
export type MessagingSystem = "postgresql" | "kafka";

/** Who handles: a consumer group, or a broadcast subscriber (by its name, when it gave one). */
export type Handler = { group: string } | { subscriber?: string };

/**
 * Runs fn, the handling of `events` by a consumer group or a broadcast subscriber, in a CONSUMER
 * span (`process <group>`, `process <subscriber>`, or for an unnamed subscriber `process <family>
 * broadcast`), under the trace contexts the events carry (tracing.ts inMessagesSpan: the child of
 * their one trace, else a trace of its own linked to each; no span when none carries one). Log
 * lines written meanwhile carry the span's trace_id, and work it starts (an RPC, a query) is under
 * it. Callers test tracingEnabled() first: this builds names and lists.
 */
export function processSpan<T>(handler: Handler, system: MessagingSystem | undefined, events: EventRecord[], fn: () => T): T {
  const group = "group" in handler ? handler.group : undefined;
  const subscriber = "subscriber" in handler ? handler.subscriber : undefined;
  const family = events[0]?.aggregateType;
  const oneFamily = events.every((e) => e.aggregateType === family);
  const attributes: Attributes = { "messaging.operation.type": "process", "messaging.operation.name": "process" };
  if (system) attributes["messaging.system"] = system;
  if (group) attributes["messaging.consumer.group.name"] = group;
  if (oneFamily && family) attributes["messaging.destination.name"] = family;
  if (events.length === 1) attributes["messaging.message.id"] = events[0].id;
  else attributes["messaging.batch.message_count"] = events.length;
  const name = `process ${group ?? subscriber ?? `${oneFamily ? family : "events"} broadcast`}`;
  return inMessagesSpan(
    name,
    SpanKind.CONSUMER,
    attributes,
    events.map((e) => e.traceparent),
    fn,
  );
}
