// Checks values against schemas of an OpenAPI 3.0 document with ajv: OpenAPI's `nullable` read as
// JSON Schema's null type, and `#/components/...` references resolved in the document.
import { Ajv } from "ajv";

type Json = Record<string, unknown>;

/** OpenAPI 3.0's nullable (and its example members) → plain JSON Schema. */
function jsonSchema(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(jsonSchema);
  if (!v || typeof v !== "object") return v;
  const out: Json = {};
  for (const [k, x] of Object.entries(v)) {
    if (k === "nullable" || k === "example") continue;
    out[k] = k === "properties" ? Object.fromEntries(Object.entries(x as Json).map(([p, ps]) => [p, jsonSchema(ps)])) : jsonSchema(x);
  }
  return (v as Json).nullable ? { anyOf: [out, { type: "null" }] } : out;
}

/** (schema, value) → the value's problems against the schema ([] when valid). */
export function openApiValidator(doc: { components: { schemas: Json } }): (schema: Json, value: unknown) => string[] {
  const ajv = new Ajv({ strict: false, allErrors: true });
  ajv.addSchema({ components: { schemas: jsonSchema(doc.components.schemas) } }, "doc");
  return (schema, value) => {
    const v = ajv.compile(jsonSchema(JSON.parse(JSON.stringify(schema).replace(/"#\/components\//g, '"doc#/components/'))) as Json);
    return v(value) ? [] : (v.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message}`);
  };
}
