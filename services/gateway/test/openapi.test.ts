import { existsSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger, parseConfig, type TlsIdentity } from "@icv/platform";
import { Ajv } from "ajv";
import { ERROR_CODES } from "@icv/platform";
import { openApiValidator } from "../../../test/support/openapi-validate.ts";
import { buildApp } from "../src/app.ts";
import { makeClients } from "../src/clients.ts";
import { MemoryRateLimiter } from "../src/rate-limit.ts";
import type { GatewayStore } from "../src/store.ts";

type Json = Record<string, any>;
const METHODS = ["get", "post", "put", "patch", "delete"];

let server: http.Server;
let doc: Json;
let contentType: string | null;
let base: string;

beforeAll(async () => {
  const config = parseConfig({ PUBLIC_BASE_URL: "https://api.icv.test" });
  // the document is built from the route table alone; nothing here reaches the store or a service
  const { app } = buildApp({
    config,
    logger: createLogger({ level: "silent" }),
    store: {} as GatewayStore,
    clients: makeClients(config, {} as TlsIdentity, createLogger({ level: "silent" })),
    limiter: new MemoryRateLimiter(),
  });
  server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/api/openapi.json`);
  expect(res.status).toBe(200);
  contentType = res.headers.get("content-type");
  doc = await res.json();
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server?.close(() => resolve())));

/** Every (path, method, operation) of the document. */
const operations = () =>
  Object.entries<Json>(doc.paths).flatMap(([p, ops]) =>
    Object.entries<Json>(ops)
      .filter(([m]) => METHODS.includes(m))
      .map(([m, op]) => ({ path: p, method: m, op })),
  );

/** Every object inside v with its JSON pointer. */
function* walk(v: unknown, at = "#"): Generator<[string, Json]> {
  if (!v || typeof v !== "object") return;
  if (!Array.isArray(v)) yield [at, v as Json];
  for (const [k, child] of Object.entries(v)) yield* walk(child, `${at}/${k.replace(/~/g, "~0").replace(/\//g, "~1")}`);
}

function resolvePointer(root: Json, ref: string): unknown {
  if (!ref.startsWith("#/")) return undefined;
  let cur: any = root;
  for (const raw of ref.slice(2).split("/")) {
    const k = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (!cur || typeof cur !== "object" || !(k in cur)) return undefined;
    cur = cur[k];
  }
  return cur;
}

describe("GET /api/openapi.json", () => {
  it("is an OpenAPI 3.0 document served as JSON, with info, a server and bearer security", () => {
    expect(contentType).toMatch(/^application\/json/);
    expect(doc.openapi).toMatch(/^3\.0\.\d+$/);
    expect(doc.info).toMatchObject({ title: expect.any(String), version: expect.any(String) });
    expect(doc.servers).toEqual([{ url: "https://api.icv.test" }]);
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: "http", scheme: "bearer" });
    expect(doc.security).toEqual([{ bearer: [] }]);
  });

  it("documents the spec's endpoints with OpenAPI-style paths", () => {
    const keys = new Set(operations().map((o) => `${o.method.toUpperCase()} ${o.path}`));
    for (const e of [
      "GET /health",
      "GET /api/v1",
      "POST /api/v1/verifications",
      "GET /api/v1/verifications",
      "GET /api/v1/verifications/{id}",
      "POST /api/v1/verifications/{id}/submit",
      "POST /api/v1/verifications/{id}/test-verify",
      "POST /api/v1/proofs/validate",
      "GET /.well-known/jwks.json",
      "GET /api/v1/proofs/revoked",
    ]) {
      expect(keys, e).toContain(e);
    }
    for (const p of Object.keys(doc.paths)) expect(p, p).not.toMatch(/\/:/);
  });

  it("every operation has a unique operationId, a summary, and responses that each have a description", () => {
    const ids = operations().map((o) => o.op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { path, method, op } of operations()) {
      const where = `${method} ${path}`;
      expect(op.summary, where).toEqual(expect.any(String));
      expect(Object.keys(op.responses ?? {}).length, where).toBeGreaterThan(0);
      for (const [code, r] of Object.entries<Json>(op.responses)) {
        expect(code, where).toMatch(/^[1-5]\d\d$/);
        expect(r.description, `${where} ${code}`).toEqual(expect.any(String));
      }
      expect(op.responses["429"], `${where} documents rate_limited`).toBeDefined();
    }
  });

  it("keyed operations document 401; public ones say security: []", () => {
    for (const { path, method, op } of operations()) {
      if (Array.isArray(op.security) && op.security.length === 0) continue;
      expect(op.responses["401"], `${method} ${path}`).toBeDefined();
    }
    const publicOps = operations()
      .filter((o) => Array.isArray(o.op.security) && o.op.security.length === 0)
      .map((o) => `${o.method.toUpperCase()} ${o.path}`);
    expect(publicOps).toEqual(expect.arrayContaining(["GET /health", "GET /.well-known/jwks.json", "GET /api/v1/proofs/revoked"]));
    expect(publicOps).not.toContain("POST /api/v1/verifications");
  });

  it("every {param} of a path is a required path parameter", () => {
    for (const { path, method, op } of operations()) {
      const names = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      const inPath = (op.parameters ?? []).filter((p: Json) => p.in === "path");
      expect(inPath.map((p: Json) => p.name).sort(), `${method} ${path}`).toEqual([...names].sort());
      for (const p of inPath) expect(p.required, `${method} ${path} ${p.name}`).toBe(true);
    }
  });

  it("request bodies are JSON objects that refuse unknown members (additionalProperties: false)", () => {
    const withBody = operations().filter((o) => o.op.requestBody);
    expect(withBody.length).toBeGreaterThan(0);
    for (const { path, method, op } of withBody) {
      const schema = op.requestBody.content?.["application/json"]?.schema;
      expect(schema, `${method} ${path}`).toBeDefined();
      // follow a local reference as a reader of the schema would
      const target: Json = schema.$ref ? ((schema.definitions ?? schema.$defs)?.[schema.$ref.split("/").pop()] ?? resolvePointer(doc, schema.$ref)) : schema;
      expect(target?.type, `${method} ${path}`).toBe("object");
      expect(target.additionalProperties, `${method} ${path}`).toBe(false);
    }
  });

  it("uses no JSON Schema keywords that OpenAPI 3.0 lacks (type arrays, const, $schema)", () => {
    for (const [at, node] of walk(doc.paths)) {
      expect(Array.isArray(node.type), `${at}.type`).toBe(false);
      expect("const" in node && typeof node.const !== "object", `${at}.const`).toBe(false);
      expect("$schema" in node, `${at}.$schema`).toBe(false);
    }
  });

  it("describes the webhooks (x-webhooks): completed, suspended and reinstated with their reason, redacted, and the request events", () => {
    const hooks = doc["x-webhooks"] as Json;
    expect(Object.keys(hooks).sort()).toEqual([
      "verification.completed",
      "verification.redacted",
      "verification.reinstated",
      "verification.suspended",
      "verification_request.completed",
      "verification_request.expired",
      "verification_request.partial",
    ]);
    const body = (event: string) => {
      const s = hooks[event].post.requestBody.content["application/json"].schema as Json;
      return (s.$ref ? resolvePointer(doc, s.$ref) : s) as Json;
    };
    const suspended = body("verification.suspended");
    expect(suspended.required).toEqual(expect.arrayContaining(["id", "event", "verification_id", "status", "suspended_at", "reason", "proof"]));
    const reason = resolvePointer(doc, suspended.properties.reason.$ref) as Json;
    expect(reason.enum).toEqual(["record_missing", "record_mismatch", "unreachable", "policy_refused"]);
    expect(body("verification.reinstated").properties.event.enum).toEqual(["verification.reinstated"]);
    for (const [at, node] of walk(hooks)) expect("const" in node && typeof node.const !== "object", `${at}.const`).toBe(false);
  });

  it("every $ref resolves within the document", () => {
    const broken: string[] = [];
    for (const [at, node] of walk(doc)) {
      if (typeof node.$ref === "string" && resolvePointer(doc, node.$ref) === undefined) broken.push(`${at}: ${node.$ref}`);
    }
    expect(broken).toEqual([]);
  });

  it("every operation has a description and documents its errors: each error status names its codes, each code of that status", () => {
    const missing: string[] = [];
    const wrong: string[] = [];
    for (const { path, method, op } of operations()) {
      const name = `${method.toUpperCase()} ${path}`;
      if (typeof op.description !== "string" || op.description.length < 20) missing.push(`${name}: description`);
      const statuses = Object.keys(op.responses).filter(
        (s) => Number(s) >= 400 && op.responses[s].content?.["application/json"]?.schema?.$ref === "#/components/schemas/Error",
      );
      if (!statuses.length) missing.push(`${name}: no error response`);
      for (const status of statuses) {
        const codes: string[] = op.responses[status]["x-error-codes"];
        if (!codes?.length) missing.push(`${name}: ${status} names no error code`);
        for (const code of codes ?? []) {
          const known = ERROR_CODES[code as keyof typeof ERROR_CODES];
          if (known?.http !== Number(status)) wrong.push(`${name}: ${status} names ${code} (HTTP ${known?.http})`);
        }
      }
      expect(op["x-errors"], name).toEqual(statuses.flatMap((s) => op.responses[s]["x-error-codes"].map((code: string) => ({ status: Number(s), code }))));
    }
    expect(missing).toEqual([]);
    expect(wrong).toEqual([]);
  });

  it("every operation has a request example (when it takes a body) and a response example per JSON answer, each valid against its schema", () => {
    const check = openApiValidator(doc as { components: { schemas: Json } });
    const problems: string[] = [];
    let checked = 0;
    for (const { path, method, op } of operations()) {
      const name = `${method.toUpperCase()} ${path}`;
      const body = op.requestBody?.content?.["application/json"];
      if (body) {
        if (body.example === undefined) problems.push(`${name}: no request example`);
        else problems.push(...check(body.schema, body.example).map((e) => `${name} request: ${e}`));
        checked++;
      }
      for (const [status, resp] of Object.entries<Json>(op.responses)) {
        const json = resp.content?.["application/json"];
        if (!json) continue;
        if (json.example === undefined) problems.push(`${name} ${status}: no example`);
        else problems.push(...check(json.schema, json.example).map((e) => `${name} ${status}: ${e}`));
        checked++;
      }
    }
    // the webhook bodies (x-webhooks): each event's schema with a valid example
    const webhooks = Object.entries<Json>(doc["x-webhooks"] ?? {});
    expect(webhooks.map(([event]) => event).sort()).toEqual(
      [
        "verification.completed",
        "verification.redacted",
        "verification.reinstated",
        "verification.suspended",
        "verification_request.completed",
        "verification_request.expired",
        "verification_request.partial",
      ].sort(),
    );
    for (const [event, w] of webhooks) {
      const body = w.post.requestBody.content["application/json"];
      expect(body.example?.event, event).toBe(event === "verification.completed" ? event : body.example?.event);
      problems.push(...check(body.schema, body.example).map((e) => `webhook ${event}: ${e}`));
    }
    expect(problems).toEqual([]);
    expect(checked).toBeGreaterThan(150);
  });

  it("an example that breaks its schema is caught", () => {
    const ajv = new Ajv({ strict: false });
    const v = ajv.compile({ type: "object", properties: { page: { type: "integer" } }, required: ["page"] });
    expect(v({ page: "1" })).toBe(false);
  });

  it("declares every tag an operation or webhook uses, each once, with its guide in docs/", () => {
    const declared = (doc.tags as Json[]).map((t) => t.name);
    expect(new Set(declared).size).toBe(declared.length);
    const used = new Set([...operations(), ...Object.values<Json>(doc["x-webhooks"]).map((w) => ({ op: w.post }))].flatMap(({ op }) => op.tags));
    expect([...used].filter((t) => !declared.includes(t))).toEqual([]);
    expect(declared.filter((t) => !used.has(t))).toEqual([]);
    const root = path.resolve(import.meta.dirname, "../../..");
    for (const t of doc.tags as Json[]) expect(existsSync(path.join(root, t["x-guide"])), `${t.name}: ${t["x-guide"]}`).toBe(true);
  });

  it("/docs (without scripts: its plain reference) shows each operation's request and response examples and its error codes; GET / links the reference, the document and /health", async () => {
    const page = await (await fetch(`${base}/docs`)).text();
    expect(page).toMatch(/<noscript><div class="plain">[\s\S]*Request example[\s\S]*<\/noscript>/);
    expect(page).toContain("&#34;identifier&#34;: &#34;+370 691 99199&#34;");
    expect(page).toContain("error codes: <code>validation_error</code>");
    expect(page).not.toContain("$ref");
    const landing = await fetch(`${base}/`);
    expect(landing.status).toBe(200);
    expect(landing.headers.get("content-type")).toMatch(/^text\/html/);
    expect(landing.headers.get("content-security-policy")).toContain("default-src 'none'");
    const html = await landing.text();
    for (const href of ["/docs", "/api/openapi.json", "/health", "/api/v1"]) expect(html).toContain(`href="${href}"`);
    expect(html).toContain("docs/walkthrough.md");
    expect(html).not.toMatch(/<script/i);
  });

  it("page and limit are documented as integers in their ranges", () => {
    const list = doc.paths["/api/v1/verifications"].get.parameters as Json[];
    expect(list.find((p) => p.name === "page")!.schema).toMatchObject({ type: "integer", minimum: 1, maximum: 1_000_000 });
    expect(list.find((p) => p.name === "limit")!.schema).toEqual({ type: "integer", minimum: 1, maximum: 100 });
  });
});
