/**
 * The event catalogue: each outbox event type and the icv.events.v1 message its payload is
 * (proto/icv/events/v1/). Producers build the message with `create(XxxSchema, {...})` and hand it
 * to `outboxEvent`; consumers read it back with `eventMessage`. The payload on the outbox and
 * Kafka is the message's protobuf JSON (proto field names, so snake_case), with two rules that
 * keep it what it has always been: timestamps are ISO 8601 with milliseconds, and a field
 * marked `(json_null)` is written as `null` when unset.
 *
 * A new event type: a message in proto/icv/events/v1/ and one line in EVENT_SCHEMAS.
 */
import { fromJson, hasOption, ScalarType, type DescMessage, type JsonObject, type JsonValue, type MessageShape } from "@bufbuild/protobuf";
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { json_null } from "@icv/contracts/gen/icv/events/v1/options_pb.ts";
import { ProofIssuedSchema, ProofReinstatedSchema, ProofRevokedSchema, ProofSuspendedSchema } from "@icv/contracts/gen/icv/events/v1/proof_events_pb.ts";
import {
  ApiKeyCreatedSchema,
  ApiKeyRevokedSchema,
  TenantCreatedSchema,
  WebhookSecretCreatedSchema,
  WebhookSecretRotatedSchema,
} from "@icv/contracts/gen/icv/events/v1/tenant_events_pb.ts";
import {
  VerificationCompletedSchema,
  VerificationRedactedSchema,
  VerificationStatusChangedSchema,
  VerificationSuspensionSchema,
} from "@icv/contracts/gen/icv/events/v1/verification_events_pb.ts";
import { VerificationRequestChangedSchema } from "@icv/contracts/gen/icv/events/v1/verification_request_events_pb.ts";
import type { OutboxEvent } from "../outbox.ts";
import type { EnvName } from "../scope.ts";

/** Event type → the message of its payload. The one table; nothing else maps the two. */
export const EVENT_SCHEMAS = {
  "verification.status_changed": VerificationStatusChangedSchema,
  "verification.completed": VerificationCompletedSchema,
  "verification.suspended": VerificationSuspensionSchema,
  "verification.reinstated": VerificationSuspensionSchema,
  "verification.redacted": VerificationRedactedSchema,
  "verification_request.partial": VerificationRequestChangedSchema,
  "verification_request.completed": VerificationRequestChangedSchema,
  "verification_request.expired": VerificationRequestChangedSchema,
  "proof.issued": ProofIssuedSchema,
  "proof.revoked": ProofRevokedSchema,
  "proof.suspended": ProofSuspendedSchema,
  "proof.reinstated": ProofReinstatedSchema,
  "tenant.created": TenantCreatedSchema,
  "api_key.created": ApiKeyCreatedSchema,
  "api_key.revoked": ApiKeyRevokedSchema,
  "webhook_secret.created": WebhookSecretCreatedSchema,
  "webhook_secret.rotated": WebhookSecretRotatedSchema,
} as const satisfies Record<string, DescMessage>;

export type EventType = keyof typeof EVENT_SCHEMAS;
/** The payload message of an event type (a union for a union of types). */
export type EventMessage<T extends EventType> = MessageShape<(typeof EVENT_SCHEMAS)[T]>;

export const isEventType = (t: string): t is EventType => Object.hasOwn(EVENT_SCHEMAS, t);

/** One field as the wire writer needs it (worked out once per message type). */
interface WireField {
  name: string;
  localName: string;
  nullable: boolean;
  kind: "as-is" | "timestamp" | "message";
  list: boolean;
  message?: DescMessage;
}

// scalars whose protobuf JSON is the JavaScript value itself (string, bool, 32-bit integers)
const AS_IS_SCALARS: ReadonlySet<ScalarType> = new Set([
  ScalarType.STRING,
  ScalarType.BOOL,
  ScalarType.INT32,
  ScalarType.UINT32,
  ScalarType.SINT32,
  ScalarType.FIXED32,
  ScalarType.SFIXED32,
]);

const plans = new WeakMap<DescMessage, WireField[]>();

function planOf(desc: DescMessage): WireField[] {
  let plan = plans.get(desc);
  if (plan) return plan;
  plan = desc.fields.map((f): WireField => {
    const base = { name: f.name, localName: f.localName, nullable: hasOption(f, json_null), list: f.fieldKind === "list" };
    const m = f.fieldKind === "message" || (f.fieldKind === "list" && f.listKind === "message") ? f.message : undefined;
    const scalar = f.fieldKind === "scalar" || (f.fieldKind === "list" && f.listKind === "scalar") ? f.scalar : undefined;
    if (!f.oneof && m?.typeName === "google.protobuf.Struct" && f.fieldKind === "message") return { ...base, kind: "as-is" };
    if (!f.oneof && m?.typeName === "google.protobuf.Timestamp") return { ...base, kind: "timestamp" };
    if (!f.oneof && m && !m.typeName.startsWith("google.protobuf.")) return { ...base, kind: "message", message: m };
    if (!f.oneof && scalar !== undefined && AS_IS_SCALARS.has(scalar)) return { ...base, kind: "as-is" };
    throw new Error(
      `${desc.typeName}.${f.name}: the event catalogue writes strings, bools, 32-bit integers, Timestamps, Structs, messages and lists of them; add this kind to catalogue.ts`,
    );
  });
  plans.set(desc, plan);
  return plan;
}

/**
 * The wire JSON of a message: the protobuf JSON mapping (proto field names; implicit fields and
 * empty lists written; unset optional fields and messages left out), written straight from the
 * message for the field kinds events use (toJson and a rewrite cost ~10× more on the proof
 * path), with timestamps as `Date.toISOString()` (the mapping would drop `.000`) and unset
 * `(json_null)` fields as null. fromJson reads it back (test/events/catalogue.test.ts).
 */
export function wireJson<D extends DescMessage>(schema: D, message: MessageShape<D>): JsonObject {
  return write(planOf(schema), message as unknown as Record<string, unknown>);
}

function write(plan: WireField[], message: Record<string, unknown>): JsonObject {
  const out: JsonObject = {};
  for (const f of plan) {
    const v = message[f.localName];
    if (v === undefined) {
      if (f.nullable) out[f.name] = null;
    } else if (f.kind === "as-is") {
      out[f.name] = v as JsonValue;
    } else {
      out[f.name] = f.list ? (v as unknown[]).map((x) => one(f, x)) : one(f, v);
    }
  }
  return out;
}

const one = (f: WireField, v: unknown): JsonValue =>
  f.kind === "timestamp" ? timestampDate(v as Timestamp).toISOString() : write(planOf(f.message!), v as Record<string, unknown>);

/** The payload of an event: its message's wire JSON. */
export function eventPayload<T extends EventType>(type: T, message: EventMessage<T>): JsonObject {
  return wireJson(EVENT_SCHEMAS[type] as DescMessage, message);
}

/** Reads a payload as its type's message. Members it does not know (a newer producer's) are ignored. */
export function decodeEvent<T extends EventType>(type: T, payload: Record<string, unknown>): EventMessage<T> {
  return fromJson(EVENT_SCHEMAS[type] as DescMessage, payload as JsonObject, { ignoreUnknownFields: true }) as EventMessage<T>;
}

/** An event's message when the event is of one of `types`, else undefined. */
export function eventMessage<T extends EventType>(e: { eventType: string; payload: Record<string, unknown> }, ...types: T[]): EventMessage<T> | undefined {
  return (types as string[]).includes(e.eventType) ? decodeEvent(e.eventType as T, e.payload) : undefined;
}

/** Where an event belongs: its aggregate and scope. */
export interface EventHead {
  aggregateType: string;
  aggregateId: string;
  tenantId: string;
  environment: EnvName;
}

/** A typed event for the outbox (appendEvent, appendEvents, writeWithEvents). */
export function outboxEvent<T extends EventType>(eventType: T, head: EventHead, message: EventMessage<T>): OutboxEvent {
  if (message.$typeName !== EVENT_SCHEMAS[eventType].typeName)
    throw new Error(`${eventType} carries ${EVENT_SCHEMAS[eventType].typeName}, not ${message.$typeName}`);
  return { ...head, eventType, payload: eventPayload(eventType, message) };
}
