// Every closed vocabulary in /api/openapi.json is an enum, and the enums are the lists the services
// act on: the channel registry's type/channel table (the verification service), the events sent as
// webhooks (the webhook service), the revocation and suspension reasons (the proof service).
import { beforeAll, describe, expect, it } from "vitest";
import { createLogger, parseConfig, type TlsIdentity } from "@icv/platform";
import { CHANNELS } from "../../verification/src/channels/registry.ts";
import { WEBHOOK_EVENT_TYPES } from "../../webhook/src/payload.ts";
import { REVOKE_REASONS, SUSPEND_REASONS } from "../../proof/src/proofs.ts";
import { buildApp } from "../src/app.ts";
import { makeClients } from "../src/clients.ts";
import { buildOpenApi } from "../src/openapi.ts";
import { MemoryRateLimiter } from "../src/rate-limit.ts";
import type { GatewayStore } from "../src/store.ts";

type Json = Record<string, any>;

/** The registry's table as lists: its types, and the channels of each. */
const REGISTRY_TYPES = Object.keys(CHANNELS);
const REGISTRY = Object.fromEntries(Object.entries(CHANNELS).map(([type, row]) => [type, Object.keys(row)])) as Record<string, string[]>;

/** Field names that always hold a word of a closed list (when the field is a string). */
const CLOSED = new Set([
  "type",
  "channel",
  "channels",
  "allowed_channels",
  "available_channels",
  "status",
  "request_status",
  "method",
  "event",
  "event_type",
  "reason",
  "revoked_reason",
  "suspended_reason",
  "action_type",
  "kind",
  "direction",
  "delivery",
  "env",
  "verification_method",
  "proof_format",
  "mask_level",
]);
/** Fields of those names that are free text, each with why. */
const FREE = new Map([["#/components/schemas/WebhookAttempt/properties/reason", "the prose beside an attempt's event"]]);

const REGISTRY_CHANNELS = [...new Set(Object.values(REGISTRY).flat())];
const CHANNEL_FIELDS = ["channel", "channels", "allowed_channels", "available_channels"];

let doc: Json;
/** Every (name, schema, pointer) of a property or parameter in the document. */
let fields: { name: string; schema: Json; at: string }[];

beforeAll(() => {
  const config = parseConfig({ PUBLIC_BASE_URL: "https://api.icv.test" });
  const logger = createLogger({ level: "silent" });
  // the document is built from the route table alone; nothing here reaches the store or a service
  const { routes } = buildApp({
    config,
    logger,
    store: {} as GatewayStore,
    clients: makeClients(config, {} as TlsIdentity, logger),
    limiter: new MemoryRateLimiter(),
  });
  doc = buildOpenApi(routes, { version: "1.0.0", serverUrl: "https://api.icv.test" });
  fields = [];
  const walk = (v: unknown, at: string) => {
    if (!v || typeof v !== "object") return;
    const o = v as Json;
    if (typeof o.name === "string" && (o.in === "query" || o.in === "path") && o.schema) fields.push({ name: o.name, schema: o.schema, at });
    if (o.properties && typeof o.properties === "object" && !Array.isArray(o.properties)) {
      for (const [name, schema] of Object.entries<Json>(o.properties)) fields.push({ name, schema, at: `${at}/properties/${name}` });
    }
    for (const [k, child] of Object.entries(o)) walk(child, `${at}/${k.replace(/~/g, "~0").replace(/\//g, "~1")}`);
  };
  walk(doc, "#");
});

/** The schema a $ref names (or the schema itself). */
const resolve = (schema: Json): Json =>
  schema.$ref
    ? resolve(
        schema.$ref
          .split("/")
          .slice(1)
          .reduce((cur: Json, k: string) => cur[k], doc),
      )
    : schema;

/** The string schemas a field's schema stands for: through $ref, allOf, anyOf/oneOf (null left out) and array items. */
function strings(schema: Json): Json[] {
  if (schema.$ref) return strings(resolve(schema));
  if (schema.allOf) return schema.allOf.flatMap(strings);
  const branches = schema.anyOf ?? schema.oneOf;
  if (branches) return branches.filter((b: Json) => b.type !== "null" && !(b.enum?.length === 1 && b.enum[0] === null)).flatMap(strings);
  if (schema.type === "array") return strings(schema.items);
  return schema.type === "string" || schema.enum ? [schema] : [];
}

/** The enums of the fields of a name: their values (a nullable one's null left out: OpenAPI 3.0.3 lists it). */
const enumsOf = (name: string) =>
  fields
    .filter((f) => f.name === name && !FREE.has(f.at))
    .flatMap((f) =>
      strings(f.schema).map((s) => ({ at: f.at, values: (s.enum as (string | null)[] | undefined)?.filter((v) => v !== null) as string[] | undefined, s })),
    );

describe("closed vocabularies in /api/openapi.json", () => {
  it("every field of a closed vocabulary is an enum (its string schemas all list their values)", () => {
    const missing = fields
      .filter((f) => CLOSED.has(f.name) && !FREE.has(f.at))
      .flatMap((f) =>
        strings(f.schema)
          .filter((s) => !Array.isArray(s.enum) || s.enum.length === 0)
          .map(() => f.at),
      );
    expect(missing).toEqual([]);
    // the walk saw the document (not a vacuous pass): dozens of such fields
    expect(fields.filter((f) => CLOSED.has(f.name)).length).toBeGreaterThan(60);
  });

  it("every channel field lists channels of the registry; those beside a type list all of them, with the registry's table in x-channels-by-type", () => {
    const channels = CHANNEL_FIELDS.flatMap(enumsOf);
    expect(channels.length).toBeGreaterThan(15);
    let withTable = 0;
    for (const c of channels) {
      for (const v of c.values ?? []) expect(REGISTRY_CHANNELS, `${c.at}: ${v}`).toContain(v);
      if (c.s["x-channels-by-type"]) {
        withTable++;
        expect(c.values, c.at).toEqual(REGISTRY_CHANNELS);
        expect(c.s["x-channels-by-type"], c.at).toEqual(REGISTRY);
      }
    }
    expect(withTable).toBeGreaterThan(15);
    // the create body's channel: the table in words as well
    const create = doc.paths["/api/v1/verifications"].post.requestBody.content["application/json"].schema;
    const body = create.$ref ? doc.components.schemas[create.$ref.split("/").pop()] : create;
    expect(body.properties.channel["x-channels-by-type"]).toEqual(REGISTRY);
    for (const [type, cs] of Object.entries(REGISTRY)) expect(body.properties.channel.description).toContain(`${type}: ${cs.join(", ")}`);
  });

  it("a nullable enum lists null (OpenAPI 3.0.3: nullable does not widen an enum)", () => {
    const nullable = CHANNEL_FIELDS.flatMap((n) => fields.filter((f) => f.name === n))
      .flatMap((f) => strings(f.schema))
      .filter((s) => s.nullable);
    expect(nullable.length).toBeGreaterThanOrEqual(2);
    for (const s of nullable) expect(s.enum).toContain(null);
  });

  it("every asset type field is the registry's types", () => {
    const types = enumsOf("type").filter((t) => t.values?.some((v) => (REGISTRY_TYPES as string[]).includes(v)));
    expect(types.length).toBeGreaterThan(10);
    for (const t of types) expect(t.values, t.at).toEqual(REGISTRY_TYPES);
  });

  it("event types are the webhook service's: each delivery's event_type (and the test event), x-webhooks and their bodies' event", () => {
    const eventTypes = enumsOf("event_type");
    expect(eventTypes.length).toBe(4); // a delivery's (in the list and the detail), the list's filter, and a user export's deliveries
    for (const e of eventTypes) expect(e.values, e.at).toEqual([...WEBHOOK_EVENT_TYPES, "webhook.test"]);
    expect(Object.keys(doc["x-webhooks"]).sort()).toEqual([...WEBHOOK_EVENT_TYPES].sort());
    const bodies = Object.values<Json>(doc["x-webhooks"]).map((w) => resolve(w.post.requestBody.content["application/json"].schema));
    const events = new Set(bodies.flatMap((b) => strings(b.properties.event)).flatMap((s) => s.enum as string[]));
    expect([...events].sort()).toEqual([...WEBHOOK_EVENT_TYPES].sort());
  });

  it("revocation and suspension reasons are the proof service's", () => {
    const revoked = [...enumsOf("revoked_reason"), ...enumsOf("reason").filter((r) => r.values?.includes("key_compromise"))];
    expect(revoked.length).toBeGreaterThanOrEqual(4);
    for (const r of revoked) expect(r.values, r.at).toEqual([...REVOKE_REASONS]);
    const suspended = [...enumsOf("suspended_reason"), ...enumsOf("reason").filter((r) => r.values?.includes("record_missing"))];
    expect(suspended.length).toBeGreaterThanOrEqual(3);
    for (const r of suspended) expect(r.values, r.at).toEqual([...SUSPEND_REASONS]);
  });
});
