/**
 * Examples for the OpenAPI document. A schema that carries its own `example` (zod `.meta({example})`,
 * written for the operations developers meet first) gives it; any other schema gets one made
 * from the schema itself: each member filled by its name and format (ids with their prefix, ISO
 * times, the first value of an enum), so every operation shows a request and a response a reader
 * can follow. test/openapi.test.ts checks every example against its schema.
 */
type Json = Record<string, unknown>;

const AT = "2026-11-22T02:01:42.000Z";
const ID_PREFIX: Record<string, string> = {
  verification_id: "ver_",
  verification_request_id: "vreq_",
  request_id: "vreq_",
  project_id: "prj_",
  profile_id: "prf_",
  session_id: "sess_",
  proof_id: "ver_",
  delivery_id: "whd_",
};
const ULID = "01M80FSQZ6SP5J0XCXB13KRSNC";

/** A string for a member named `name` that satisfies the schema's format, length and pattern as far as names tell. */
function stringFor(name: string, s: Json): string {
  if (s.format === "date-time" || /(_at|^since)$/.test(name)) return AT;
  if (s.format === "uri" || /url$|uri$/.test(name)) return "https://example.com/callback";
  if (s.format === "email" || name === "email") return "jane@example.com";
  if (ID_PREFIX[name]) return `${ID_PREFIX[name]}${ULID}`;
  if (name === "id") return `ver_${ULID}`;
  if (/token$/.test(name)) return "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ2ZXJfMDEifQ.c2lnbmF0dXJl";
  if (name === "identifier" || name === "phone_number") return "+37069199199";
  if (name === "external_user_id" || name === "user_id") return "user-42";
  if (name === "code" || name === "challenge_code") return "X7K2M9";
  if (name === "validity_requirement") return "30d";
  if (name === "channel") return "email";
  const min = typeof s.minLength === "number" ? s.minLength : 0;
  const max = typeof s.maxLength === "number" ? s.maxLength : 64;
  let v = name ? name.replace(/_/g, "-") : "text";
  while (v.length < min) v += "x";
  return v.slice(0, Math.max(max, min));
}

function numberFor(s: Json): number {
  const lo = typeof s.minimum === "number" ? s.minimum : typeof s.exclusiveMinimum === "number" ? s.exclusiveMinimum + 1 : 1;
  const hi = typeof s.maximum === "number" ? s.maximum : Number.POSITIVE_INFINITY;
  return Math.min(Math.max(lo, 1), hi);
}

/** An example value of a JSON schema (OpenAPI 3.0), $refs resolved in `components`. */
export function exampleOf(schema: Json, components: Record<string, Json>, name = "", depth = 0): unknown {
  if (depth > 12) return undefined;
  if (typeof schema.$ref === "string") {
    const target = components[schema.$ref.replace("#/components/schemas/", "")];
    return target ? exampleOf(target, components, name, depth + 1) : undefined;
  }
  if (schema.example !== undefined) return schema.example;
  if (schema.default !== undefined) return schema.default;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  for (const k of ["allOf", "anyOf", "oneOf"] as const) {
    const list = schema[k] as Json[] | undefined;
    if (!list?.length) continue;
    if (k !== "allOf") return exampleOf(list[0], components, name, depth + 1);
    return Object.assign({}, ...list.map((p) => exampleOf(p, components, name, depth + 1) as Json));
  }
  switch (schema.type) {
    case "object": {
      // the members always there: an optional one shows only in a schema's own example
      const props = (schema.properties ?? {}) as Record<string, Json>;
      const required = new Set((schema.required ?? []) as string[]);
      const out: Json = {};
      for (const [k, p] of Object.entries(props)) {
        if (!required.has(k)) continue;
        const v = exampleOf(p, components, k, depth + 1);
        if (v !== undefined) out[k] = v;
      }
      return out;
    }
    case "array": {
      const item = exampleOf((schema.items ?? {}) as Json, components, name.replace(/s$/, ""), depth + 1);
      const n = typeof schema.minItems === "number" ? Math.max(schema.minItems, 1) : 1;
      return item === undefined ? [] : Array.from({ length: n }, () => item);
    }
    case "string":
      return stringFor(name, schema);
    case "integer":
      return Math.round(numberFor(schema));
    case "number":
      return numberFor(schema);
    case "boolean":
      return true;
    default:
      return schema.nullable ? null : {};
  }
}
