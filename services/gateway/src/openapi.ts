import { z } from "zod";
import type { RouteDef } from "./registry.ts";
import { ErrorBody } from "./schemas.ts";

type Json = Record<string, unknown>;

const toSchema = (s: z.ZodType, io: "input" | "output"): Json => {
  const json = z.toJSONSchema(s, { target: "openapi-3.0", io, unrepresentable: "any" }) as Json;
  delete json.$schema;
  delete json.id;
  return json;
};

/** The parameters of a zod object, as OpenAPI parameters of one location. */
function parameters(schema: z.ZodType | undefined, where: "query" | "path"): Json[] {
  if (!schema) return [];
  const json = toSchema(schema, "input") as { properties?: Record<string, Json>; required?: string[] };
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
  for (const r of routes) {
    const responses: Record<string, Json> = {};
    for (const [code, resp] of Object.entries(r.responses)) {
      responses[code] = {
        description: resp.description,
        ...(resp.schema ? { content: { [resp.contentType ?? "application/json"]: { schema: toSchema(resp.schema, "output") } } } : {}),
        ...(!resp.schema && resp.contentType ? { content: { [resp.contentType]: { schema: { type: "string" } } } } : {}),
      };
    }
    if (r.auth === "key") responses["401"] ??= { description: "unauthorized", content: { "application/json": { schema: toSchema(ErrorBody, "output") } } };
    responses["429"] ??= { description: "rate_limited", content: { "application/json": { schema: toSchema(ErrorBody, "output") } } };
    (paths[r.path] ??= {})[r.method] = {
      tags: [r.tag],
      summary: r.summary,
      ...(r.description ? { description: r.description } : {}),
      operationId: `${r.method}${r.path.replace(/[{}]/g, "").replace(/[^A-Za-z0-9]+(.)?/g, (_, ch: string | undefined) => (ch ?? "").toUpperCase())}`,
      ...(r.auth === "public" ? { security: [] } : {}),
      ...(r.handler ? {} : { "x-icv-planned": true }),
      parameters: [...parameters(r.params, "path"), ...parameters(r.query, "query")],
      ...(r.body ? { requestBody: { required: true, content: { "application/json": { schema: toSchema(r.body, "input") } } } } : {}),
      responses,
    };
  }
  return {
    openapi: "3.0.3",
    info: {
      title: "ICV — identity-control verification API",
      version: info.version,
      description: "Prove that a user controls a phone, email, domain, social account, wallet, exchange account or Telegram bot, and get an RS256 proof anyone can check offline.",
    },
    servers: [{ url: info.serverUrl }],
    components: { securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "pk_live_… or pk_test_… API key" } } },
    security: [{ bearer: [] }],
    paths,
  };
}
