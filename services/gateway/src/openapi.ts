import { z } from "zod";
import type { RouteDef } from "./registry.ts";
import { ErrorBody } from "./schemas.ts";
import { WEBHOOK_SCHEMAS } from "./webhook-schemas.ts";

type Json = Record<string, unknown>;

/** Named schemas (zod `.meta({id})`) collected into components.schemas while the document is built. */
type Components = Record<string, Json>;

const REF = /"#\/definitions\//g;

function toSchema(s: z.ZodType, io: "input" | "output", components: Components): Json {
  const json = z.toJSONSchema(s, { target: "openapi-3.0", io, unrepresentable: "any" }) as Json;
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
    };
  }
  // the webhooks a receiver gets (OpenAPI 3.0's x-webhooks: 3.1's webhooks), signed as events-and-webhooks.md says
  const webhooks = Object.fromEntries(
    Object.entries(WEBHOOK_SCHEMAS).map(([event, schema]) => [
      event,
      {
        post: {
          summary: `${event} (to the tenant's webhook endpoint and the verification's callback_url)`,
          requestBody: { required: true, content: { "application/json": { schema: toSchema(schema, "output", components) } } },
          responses: { "200": { description: "Any 2xx: delivered (else retried with backoff)" } },
        },
      },
    ]),
  );
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
    paths,
    "x-webhooks": webhooks,
  };
}
