import { z } from "zod";
import { ERROR_CODES } from "@icv/platform";
import { exampleOf } from "./openapi-examples.ts";
import type { RouteDef } from "./registry.ts";
import { ErrorBody } from "./schemas.ts";
import { WEBHOOK_SCHEMAS } from "./webhook-schemas.ts";

type Json = Record<string, unknown>;

/** Named schemas (zod `.meta({id})`) collected into components.schemas while the document is built. */
type Components = Record<string, Json>;

const REF = /"#\/definitions\//g;

/** The operations' tags, each with the guide (docs/…) that explains it, in the order a reader meets them. */
const TAGS: [name: string, description: string, guide: string][] = [
  ["Verifications", "One asset, one channel: create, complete (submit, test-verify), read, resend, its live events.", "docs/walkthrough.md"],
  ["Domains", "Domain verifications by DNS record, HTTP file or email, and their checks.", "docs/domains.md"],
  ["Verification requests", "Several assets behind one hosted page, with webhooks as they complete.", "docs/verification-requests.md"],
  ["Hosted page", "The calls the hosted request page makes, authorised by the request token in its URL's fragment.", "docs/hosted-page.md"],
  ["Smart reuse", "Offering an end user's existing proofs to a new request.", "docs/reuse.md"],
  ["Proofs", "Validating, revoking and checking proofs offline: JWKS, the revocation list, status lists, SD-JWT VC metadata.", "docs/proofs.md"],
  ["Sessions", "Phone-first sessions: the user messages our bot and the number is captured.", "docs/sessions.md"],
  ["Auth sessions", "2FA, login and recovery on a known number.", "docs/sessions.md"],
  ["OAuth sign-in", "Social and exchange accounts proved by signing in with the provider.", "docs/oauth.md"],
  ["Verified users", "Verified verifications grouped by external_user_id.", "docs/verified-users.md"],
  ["Webhooks", "The delivery log, its statistics and retries; the bodies under x-webhooks.", "docs/events-and-webhooks.md"],
  ["Projects and message templates", "Branding, callbacks and message texts per project.", "docs/templates.md"],
  ["Profiles", "Public pages listing verified assets.", "docs/profiles.md"],
  [
    "Transparency log",
    "The public Merkle log of every proof issued and revoked: checkpoints, tiles, inclusion and consistency proofs.",
    "docs/transparency-log.md",
  ],
  ["Test mode", "What test keys send instead of real messages.", "docs/testing.md"],
  ["Meta", "Health, version, this document and the reference page.", "docs/api-conventions.md"],
];

const CODE_NAMES = Object.keys(ERROR_CODES) as (keyof typeof ERROR_CODES)[];

const isErrorBody = (resp: Json) => JSON.stringify(resp.content ?? {}).includes('"#/components/schemas/Error"');

/** The error codes an error response's description names (the route tables write them first, in prose). */
export function errorCodesOf(description: string): string[] {
  return CODE_NAMES.filter((c) => new RegExp(`(^|[^a-z_])${c}([^a-z_]|$)`).test(description));
}

/** OpenAPI 3.0.3: `nullable` does not widen an `enum`, so a nullable enum lists null among its values. */
function nullableEnums(v: unknown): void {
  if (!v || typeof v !== "object") return;
  const o = v as Json;
  if (o.nullable === true && Array.isArray(o.enum) && !o.enum.includes(null)) o.enum = [...o.enum, null];
  for (const child of Object.values(o)) nullableEnums(child);
}

function toSchema(s: z.ZodType, io: "input" | "output", components: Components): Json {
  const json = z.toJSONSchema(s, { target: "openapi-3.0", io, unrepresentable: "any" }) as Json;
  nullableEnums(json);
  const defs = (json.definitions ?? {}) as Record<string, Json>;
  delete json.definitions;
  delete json.$schema;
  delete json.id;
  for (const [name, def] of Object.entries(defs)) {
    const moved = JSON.parse(JSON.stringify(def).replace(REF, '"#/components/schemas/'));
    if (components[name] && JSON.stringify(components[name]) !== JSON.stringify(moved)) {
      throw new Error(`schema ${name} differs between requests and responses; give it two ids`);
    }
    components[name] = moved;
  }
  return JSON.parse(JSON.stringify(json).replace(REF, '"#/components/schemas/'));
}

/** The parameters of a zod object, as OpenAPI parameters of one location. */
function parameters(schema: z.ZodType | undefined, where: "query" | "path", components: Components): Json[] {
  if (!schema) return [];
  const json = toSchema(schema, "input", components) as { properties?: Record<string, Json>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, s]) => ({
    name,
    in: where,
    required: where === "path" || (json.required ?? []).includes(name),
    schema: s,
  }));
}

/** Builds the OpenAPI 3.0 document from the route table: one source for routes, validation and docs. */
export function buildOpenApi(routes: RouteDef[], info: { version: string; serverUrl: string }): Json {
  const paths: Record<string, Record<string, Json>> = {};
  const components: Components = {};
  const errorSchema = () => toSchema(ErrorBody, "output", components);
  for (const r of routes) {
    const responses: Record<string, Json> = {};
    for (const [code, resp] of Object.entries(r.responses)) {
      responses[code] = {
        description: resp.description,
        ...(resp.schema ? { content: { [resp.contentType ?? "application/json"]: { schema: toSchema(resp.schema, "output", components) } } } : {}),
        ...(!resp.schema && resp.contentType ? { content: { [resp.contentType]: { schema: { type: "string" } } } } : {}),
      };
    }
    if (r.auth === "key") responses["401"] ??= { description: "unauthorized", content: { "application/json": { schema: errorSchema() } } };
    responses["429"] ??= { description: "rate_limited", content: { "application/json": { schema: errorSchema() } } };
    // the codes each error status can answer, machine-readable beside the prose (and listed on the operation)
    const errors: { status: number; code: string }[] = [];
    for (const [status, resp] of Object.entries(responses)) {
      // an error answer is the Error body (a 503 of /health answers the health report instead)
      if (Number(status) < 400 || !isErrorBody(resp)) continue;
      const codes = errorCodesOf(String(resp.description));
      resp["x-error-codes"] = codes;
      for (const code of codes) errors.push({ status: Number(status), code });
    }
    (paths[r.path] ??= {})[r.method] = {
      tags: [r.tag],
      summary: r.summary,
      ...(r.description ? { description: r.description } : {}),
      operationId: `${r.method}${r.path.replace(/[{}]/g, "").replace(/[^A-Za-z0-9]+(.)?/g, (_, ch: string | undefined) => (ch ?? "").toUpperCase())}`,
      ...(r.auth === "public" ? { security: [] } : {}),
      ...(r.handler ? {} : { "x-icv-planned": true }),
      parameters: [...parameters(r.params, "path", components), ...parameters(r.query, "query", components)],
      ...(r.body ? { requestBody: { required: true, content: { "application/json": { schema: toSchema(r.body, "input", components) } } } } : {}),
      responses,
      "x-errors": errors,
    };
  }
  // the webhooks a receiver gets (OpenAPI 3.0's x-webhooks: 3.1's webhooks), signed as events-and-webhooks.md says
  const webhooks = Object.fromEntries(
    Object.entries(WEBHOOK_SCHEMAS).map(([event, schema]) => [
      event,
      {
        post: {
          tags: ["Webhooks"],
          summary: `${event} (to the tenant's webhook endpoint and the verification's callback_url)`,
          description:
            "Signed: X-Service-Signature (and X-Proof-Signature) is the hex HMAC-SHA256 of the raw body under the webhook secret; webhook-id, webhook-timestamp and webhook-signature follow Standard Webhooks. The same event may arrive more than once: dedupe on id.",
          operationId: `webhook${event.replace(/(^|[._])(.)/g, (_, _s: string, ch: string) => ch.toUpperCase())}`,
          requestBody: { required: true, content: { "application/json": { schema: toSchema(schema, "output", components) } } },
          responses: { "200": { description: "Any 2xx: delivered (else retried with backoff)" } },
        },
      },
    ]),
  );
  addExamples(paths, components);
  addExamples(webhooks as Record<string, Record<string, Json>>, components);
  return {
    openapi: "3.0.3",
    info: {
      title: "ICV — identity-control verification API",
      version: info.version,
      description:
        "Prove that a user controls a phone, email, domain, social account, wallet, exchange account or Telegram bot, and get an RS256 proof anyone can check offline.",
    },
    servers: [{ url: info.serverUrl }],
    components: {
      schemas: components,
      securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "pk_live_… or pk_test_… API key" } },
    },
    security: [{ bearer: [] }],
    tags: TAGS.map(([name, description, guide]) => ({ name, description: `${description} Guide: ${guide}.`, "x-guide": guide })),
    paths,
    "x-webhooks": webhooks,
  };
}

/** A request and a response example on every JSON body (made once every schema is known); an error's example names its first code. */
function addExamples(paths: Record<string, Record<string, Json>>, components: Components): void {
  for (const ops of Object.values(paths)) {
    for (const op of Object.values(ops)) {
      const media = (op.requestBody as Json | undefined)?.content as Record<string, Json> | undefined;
      if (media?.["application/json"]) media["application/json"].example = exampleOf(media["application/json"].schema as Json, components);
      for (const [status, resp] of Object.entries(op.responses as Record<string, Json>)) {
        const json = (resp.content as Record<string, Json> | undefined)?.["application/json"];
        if (!json) continue;
        const codes = resp["x-error-codes"] as string[] | undefined;
        json.example = codes?.length
          ? { error: { code: codes[0], message: `${codes[0]} (HTTP ${status})`, request_id: "5f0c6e3a-2b1d-4c8e-9a7f-1d2e3f4a5b6c" } }
          : exampleOf(json.schema as Json, components);
      }
    }
  }
}
