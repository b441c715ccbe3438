/**
 * REST bodies and rows ⇄ RPC messages, driven by the message's descriptor instead of copied field by
 * field. The proto field names are the REST and row names (snake_case); protobuf-es names them in
 * camelCase (localName); the proto's field order is the REST answer's. So the message descriptor is
 * the mapping table, and a few rules per message say where a REST shape differs from the default:
 *
 * - to REST (`restOf`): a Timestamp becomes its ISO string, a Struct stays a JSON object and another
 *   message recurses; an unset message and an optional scalar that is unset or empty are left out;
 *   other scalars always appear.
 * - from REST or a row (`messageOf`): an ISO string or a Date becomes a Timestamp, a number a
 *   64-bit integer where the field is one, a nested object a nested message; null is unset (an
 *   implicit scalar's zero value).
 * - to plain values (`plainOf`): a message's fields by their camelCase names, nested messages as
 *   plain objects and 64-bit integers as numbers (a use case's input).
 *
 * A rule, keyed by the REST name (a nested field by its path, `proof.identifier_salt`), answers the
 * value instead; `undefined` leaves the member out.
 */
import { ScalarType, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { FeatureSet_FieldPresence, timestampFromDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { iso } from "./time.ts";

type Obj = Record<string, unknown>;
/** Rules by REST name; each takes the message (or row) at its level. */
export type FieldRules = Record<string, (source: never) => unknown>;
type Rule = (source: object) => unknown;

const TIMESTAMP = "google.protobuf.Timestamp";
const STRUCT = "google.protobuf.Struct";
const LONG = new Set([ScalarType.INT64, ScalarType.UINT64, ScalarType.SINT64, ScalarType.FIXED64, ScalarType.SFIXED64]);

const isSet = (v: unknown) => v !== undefined && v !== null && v !== "";
const NO_RULES: FieldRules = {};

/** The zero value of an implicit scalar (what an unset proto3 field reads as). */
function zeroOf(f: DescField): unknown {
  if (f.fieldKind === "enum") return 0;
  if (f.fieldKind !== "scalar") return undefined;
  if (f.scalar === ScalarType.STRING) return "";
  if (f.scalar === ScalarType.BOOL) return false;
  if (f.scalar === ScalarType.BYTES) return new Uint8Array(0);
  return LONG.has(f.scalar) ? 0n : 0;
}

/** How one field crosses to REST, worked out once per message and rules (restOf is on every answer's path). */
type RestStep =
  | { name: string; local: string; how: "rule"; rule: Rule }
  | { name: string; local: string; how: "time" | "as-is" | "if-set" | "always" }
  | { name: string; local: string; how: "nested"; plan: RestStep[] };

const restPlans = new WeakMap<DescMessage, WeakMap<FieldRules, RestStep[]>>();

function restPlan(schema: DescMessage, rules: FieldRules, path: string): RestStep[] {
  return schema.fields.map((f): RestStep => {
    const key = path + f.name;
    const base = { name: f.name, local: f.localName };
    const rule = rules[key] as Rule | undefined;
    if (rule) return { ...base, how: "rule", rule };
    if (f.fieldKind === "message") {
      if (f.message.typeName === TIMESTAMP) return { ...base, how: "time" };
      if (f.message.typeName === STRUCT) return { ...base, how: "as-is" };
      return { ...base, how: "nested", plan: restPlan(f.message, rules, `${key}.`) };
    }
    return { ...base, how: f.fieldKind === "scalar" && f.presence === FeatureSet_FieldPresence.EXPLICIT ? "if-set" : "always" };
  });
}

function runRest(plan: RestStep[], msg: object): Obj {
  const m = msg as Obj;
  const out: Obj = {};
  for (const step of plan) {
    const value = m[step.local];
    let rest: unknown;
    switch (step.how) {
      case "rule":
        rest = step.rule(msg);
        break;
      case "time":
        rest = value === undefined ? undefined : iso(value as Timestamp);
        break;
      case "as-is":
      case "always":
        rest = value;
        break;
      case "if-set":
        rest = isSet(value) ? value : undefined;
        break;
      case "nested":
        rest = value === undefined ? undefined : runRest(step.plan, value as object);
        break;
    }
    if (rest !== undefined) out[step.name] = rest;
  }
  return out;
}

/** RPC message → REST body (snake_case members, ISO timestamps, absent members left out). */
export function restOf(schema: DescMessage, msg: object, rules: FieldRules = NO_RULES): Obj {
  let byRules = restPlans.get(schema);
  if (!byRules) restPlans.set(schema, (byRules = new WeakMap()));
  let plan = byRules.get(rules);
  if (!plan) byRules.set(rules, (plan = restPlan(schema, rules, "")));
  return runRest(plan, msg);
}

/** REST body or row (snake_case members) → RPC message fields; members the source lacks are left out. */
export function messageOf(schema: DescMessage, source: object, rules: FieldRules = {}, path = ""): Obj {
  const s = source as Obj;
  const out: Obj = {};
  for (const f of schema.fields) {
    const key = path + f.name;
    const rule = rules[key] as Rule | undefined;
    if (rule) {
      const v = rule(source);
      if (v !== undefined) out[f.localName] = v;
      continue;
    }
    if (!(f.name in s)) continue;
    const value = s[f.name];
    if (f.fieldKind === "message") {
      if (value === undefined || value === null) out[f.localName] = undefined;
      else if (f.message.typeName === TIMESTAMP) out[f.localName] = timestampFromDate(value instanceof Date ? value : new Date(value as string));
      else if (f.message.typeName === STRUCT) out[f.localName] = value;
      else out[f.localName] = { $typeName: f.message.typeName, ...messageOf(f.message, value as object, rules, `${key}.`) };
    } else if (value === undefined || value === null) {
      out[f.localName] = f.fieldKind === "scalar" && f.presence === FeatureSet_FieldPresence.EXPLICIT ? undefined : zeroOf(f);
    } else if (f.fieldKind === "scalar" && LONG.has(f.scalar) && typeof value === "number") out[f.localName] = BigInt(value);
    else out[f.localName] = value;
  }
  return out;
}

/** RPC message → its fields as plain values by their camelCase names (nested messages plain, 64-bit integers as numbers), `omit` left out. */
export function plainOf(schema: DescMessage, msg: object, omit: readonly string[] = []): Obj {
  const m = msg as Obj;
  const out: Obj = {};
  for (const f of schema.fields) {
    if (omit.includes(f.name)) continue;
    const value = m[f.localName];
    if (value === undefined) out[f.localName] = undefined;
    else if (f.fieldKind === "message" && f.message.typeName !== TIMESTAMP && f.message.typeName !== STRUCT)
      out[f.localName] = plainOf(f.message, value as object);
    else if (f.fieldKind === "scalar" && LONG.has(f.scalar)) out[f.localName] = Number(value);
    else out[f.localName] = value;
  }
  return out;
}
