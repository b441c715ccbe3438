// The API's own surface: /health, /api/v1, the OpenAPI description (every endpoint of the spec),
// the HTML reference, X-Request-Id, and the list's pagination and filters.
import { beforeAll, describe, expect, it } from "vitest";
import { api } from "../support/stack.ts";
import { useStack, useTenant } from "../support/use-stack.ts";
import { expectError } from "../support/expect-error.ts";

const stack = useStack();
const t = useTenant(stack, "Meta");

const SERVICES = ["verification", "proof", "session", "domain", "webhook"];

/** Every endpoint named in interface-spec.md (":param" written as "{}"; parameter names are free). */
const SPEC_ENDPOINTS: [string, string][] = [
  ["post", "/api/v1/verifications"],
  ["get", "/api/v1/verifications"],
  ["get", "/api/v1/verifications/{}"],
  ["post", "/api/v1/verifications/{}/submit"],
  ["post", "/api/v1/verifications/{}/verify"],
  ["post", "/api/v1/verifications/{}/resend"],
  ["post", "/api/v1/verifications/{}/test-verify"],
  ["get", "/api/v1/verifications/{}/events"],
  ["get", "/api/v1/verifications/users"],
  ["get", "/api/v1/verifications/users/{}"],
  ["post", "/api/v1/verifications/domain"],
  ["post", "/api/v1/verifications/domain/{}/check"],
  ["post", "/api/v1/proofs/validate"],
  ["get", "/api/v1/proofs/{}/status"],
  ["post", "/api/v1/proofs/{}/revoke"],
  ["get", "/api/v1/proofs/revoked"],
  ["get", "/.well-known/jwks.json"],
  ["post", "/api/v1/sessions"],
  ["get", "/api/v1/sessions/{}"],
  ["post", "/api/v1/auth/sessions"],
  ["get", "/api/v1/auth/sessions/{}"],
  ["post", "/api/v1/verification-requests"],
  ["get", "/api/v1/verification-requests"],
  ["get", "/api/v1/verification-requests/{}"],
  ["get", "/api/v1/verification-requests/by-reference/{}"],
  ["delete", "/api/v1/verification-requests/{}"],
  ["get", "/api/v1/webhook-deliveries"],
  ["get", "/api/v1/webhook-deliveries/{}"],
  ["get", "/api/v1/webhook-deliveries/stats"],
  ["post", "/api/v1/webhook-deliveries/{}/retry"],
  ["get", "/health"],
  ["get", "/api/openapi.json"],
  // "further endpoint families": smart reuse, profiles, message templates
  ["get", "/api/v1/verify/request/{}/proofs"],
  ["get", "/api/v1/me/profiles"],
  ["patch", "/api/v1/me/profiles/{}"],
  ["delete", "/api/v1/me/profiles/{}"],
  ["get", "/api/v1/me/projects"],
];
const shape = (p: string) => p.replace(/\{[^}]*\}/g, "{}");

describe("/health", () => {
  it("answers healthy with every part up", async () => {
    const r = await api(stack.url).get("/health");
    expect(r.status).toBe(200);
    expect(r.body.status).toBe("healthy");
    expect(new Date(r.body.timestamp).toISOString()).toBe(r.body.timestamp);
    expect(Math.abs(Date.parse(r.body.timestamp) - Date.now())).toBeLessThan(60_000);
    expect(r.body.services.database).toBe("up");
    expect(r.body.services.redis).toBe(process.env.REDIS_URL ? "up" : "disabled");
    for (const s of SERVICES) expect(r.body.services[s], s).toBe("up");
    expect(r.headers.get("x-request-id")).toBeTruthy();
  });
});

describe("/api/v1", () => {
  it("names the API and its version", async () => {
    const r = await api(stack.url).get("/api/v1");
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ name: expect.any(String), version: expect.stringMatching(/^\d+\.\d+\.\d+/), description: expect.any(String) });
  });
});

describe("/api/openapi.json and /docs", () => {
  let doc: any;
  beforeAll(async () => {
    const r = await api(stack.url).get("/api/openapi.json");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toMatch(/^application\/json/);
    doc = r.body;
  });

  it("is OpenAPI 3.0 and lists every endpoint of the spec with its method", () => {
    expect(doc.openapi).toMatch(/^3\.0\.\d+$/);
    expect(doc.info.title).toBeTruthy();
    const byShape = new Map(Object.entries<Record<string, unknown>>(doc.paths).map(([p, ops]) => [shape(p), ops]));
    const missing = SPEC_ENDPOINTS.filter(([m, p]) => !byShape.get(p)?.[m]).map(([m, p]) => `${m.toUpperCase()} ${p}`);
    expect(missing).toEqual([]);
    // the auto-verify call of smart reuse and the template PUT (paths only named in the spec)
    const all = Object.entries<Record<string, unknown>>(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m} ${p}`));
    expect(all.some((e) => /^post \/api\/v1\/verify\/request\/\{[^}]+\}\/.*auto-verify/.test(e))).toBe(true);
    expect(all.some((e) => /^put \/api\/v1\/me\/projects\/.+\/templates\//.test(e))).toBe(true);
  });

  it("documents the error body and the bearer key", () => {
    const create = doc.paths["/api/v1/verifications"].post;
    expect(create.requestBody.content["application/json"].schema).toBeTruthy();
    expect(Object.keys(create.responses)).toEqual(expect.arrayContaining(["201", "400", "401", "429"]));
    expect(JSON.stringify(doc.components.securitySchemes)).toMatch(/bearer/i);
    expect(doc.paths["/health"].get.security).toEqual([]);
  });

  it("/docs is an HTML page with a Content-Security-Policy that mentions every path (its plain reference, for readers without scripts)", async () => {
    const r = await api(stack.url).get("/docs");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toMatch(/^text\/html/);
    expect(r.headers.get("content-security-policy")).toMatch(/default-src/);
    expect(r.text).toMatch(/^<!doctype html>/i);
    // scripts only from this origin's files (the renderer: docs-browser.test.ts), none inline
    expect(r.text).not.toMatch(/<script(?! src="\/docs\/assets\/)/i);
    const paths = Object.keys(doc.paths);
    for (const [, p] of SPEC_ENDPOINTS) {
      const actual = paths.find((x) => shape(x) === p)!;
      expect(r.text, actual).toContain(`<code>${actual}</code>`);
    }
  });
});

describe("X-Request-Id", () => {
  it("is echoed when sent, on answers and on errors", async () => {
    const ok = await api(stack.url).get("/api/v1", { "x-request-id": "trace-abc-123" });
    expect(ok.headers.get("x-request-id")).toBe("trace-abc-123");
    const err = await api(stack.url).get("/api/v1/verifications", { "x-request-id": "trace-abc-124" });
    expect(err.headers.get("x-request-id")).toBe("trace-abc-124");
    expect(expectError(err, 401, "unauthorized").request_id).toBe("trace-abc-124");
  });

  it("is generated when not sent, different for each request", async () => {
    const a = await api(stack.url).get("/api/v1");
    const b = await api(stack.url).get("/api/v1");
    const ida = a.headers.get("x-request-id");
    const idb = b.headers.get("x-request-id");
    expect(ida).toMatch(/^\S{8,}$/);
    expect(idb).toMatch(/^\S{8,}$/);
    expect(ida).not.toBe(idb);
  });
});

describe("GET /api/v1/verifications", () => {
  const c = () => api(stack.url, t.testKey);
  const made: { id: string; created_at: string; type: string; channel: string; external_user_id?: string }[] = [];

  beforeAll(async () => {
    const bodies = [
      { type: "phone", channel: "sms", identifier: "+37069100050", external_user_id: "u-1" },
      { type: "phone", channel: "telegram", identifier: "+37069100051", external_user_id: "u-2" },
      { type: "email", channel: "email", identifier: "a@example.com", external_user_id: "u-1" },
      { type: "phone", channel: "sms", identifier: "+37069100052" },
      { type: "domain", channel: "dns", identifier: "example.com", external_user_id: "u-1" },
    ];
    for (const b of bodies) {
      const r = await c().post("/api/v1/verifications", b);
      expect(r.status, r.text).toBe(201);
      made.push(r.body);
      await new Promise((res) => setTimeout(res, 5)); // distinct created_at milliseconds
    }
    for (const i of [0, 2]) expect((await c().post(`/api/v1/verifications/${made[i].id}/test-verify`)).status).toBe(200);
  });

  const ids = async (query: string) => {
    const r = await c().get(`/api/v1/verifications${query}`);
    expect(r.status, r.text).toBe(200);
    return r.body.data.map((v: { id: string }) => v.id);
  };
  const newestFirst = (list: typeof made) => [...list].reverse().map((v) => v.id);

  it("pages newest first with data and pagination {page, limit, total, pages, hasMore, has_more}", async () => {
    const all = await c().get("/api/v1/verifications");
    expect(all.body.pagination).toEqual({ page: 1, limit: 20, total: 5, pages: 1, hasMore: false, has_more: false });
    expect(all.body.data.map((v: { id: string }) => v.id)).toEqual(newestFirst(made));

    const p1 = await c().get("/api/v1/verifications?limit=2");
    expect(p1.body.pagination).toEqual({ page: 1, limit: 2, total: 5, pages: 3, hasMore: true, has_more: true });
    const p2 = await c().get("/api/v1/verifications?limit=2&page=2");
    expect(p2.body.pagination).toEqual({ page: 2, limit: 2, total: 5, pages: 3, hasMore: true, has_more: true });
    const p3 = await c().get("/api/v1/verifications?limit=2&page=3");
    expect(p3.body.pagination).toEqual({ page: 3, limit: 2, total: 5, pages: 3, hasMore: false, has_more: false });
    const pages = [p1, p2, p3].flatMap((p) => p.body.data.map((v: { id: string }) => v.id));
    expect(pages).toEqual(newestFirst(made));
    const beyond = await c().get("/api/v1/verifications?limit=2&page=4");
    expect(beyond.body.data).toEqual([]);
    expect(beyond.body.pagination).toMatchObject({ page: 4, total: 5, hasMore: false });
  });

  it("filters by status, type, channel and external_user_id", async () => {
    expect(await ids("?status=verified")).toEqual([made[2].id, made[0].id]);
    expect(await ids("?status=pending")).toEqual([made[4].id, made[3].id, made[1].id]);
    expect(await ids("?type=email")).toEqual([made[2].id]);
    expect(await ids("?type=phone&channel=sms")).toEqual([made[3].id, made[0].id]);
    expect(await ids("?channel=telegram")).toEqual([made[1].id]);
    expect(await ids("?external_user_id=u-1")).toEqual([made[4].id, made[2].id, made[0].id]);
    expect(await ids("?external_user_id=u-1&status=pending")).toEqual([made[4].id]);
    expect(await ids("?status=failed")).toEqual([]);
    const counted = await c().get("/api/v1/verifications?type=phone&limit=1");
    expect(counted.body.pagination).toEqual({ page: 1, limit: 1, total: 3, pages: 3, hasMore: true, has_more: true });
  });

  it("filters by created_after and created_before", async () => {
    const mid = made[2].created_at;
    expect(await ids(`?created_after=${encodeURIComponent(mid)}`)).toEqual([made[4].id, made[3].id]);
    expect(await ids(`?created_before=${encodeURIComponent(mid)}`)).toEqual([made[1].id, made[0].id]);
    expect(await ids(`?created_after=${encodeURIComponent(made[0].created_at)}&created_before=${encodeURIComponent(made[4].created_at)}`)).toEqual([
      made[3].id,
      made[2].id,
      made[1].id,
    ]);
    expectError(await c().get("/api/v1/verifications?created_after=yesterday"), 400, "validation_error");
    expectError(await c().get("/api/v1/verifications?status=done"), 400, "validation_error");
  });
});

// last: it takes the proof service down for the rest of the file
describe("/health when a core service is down", () => {
  it("answers 503 unhealthy and names the service that is down", async () => {
    const proof = stack.services.proof;
    await proof.close();
    // the stack's own close() must not close it a second time
    stack.services.proof = { ...proof, close: async () => undefined };
    const r = await api(stack.url).get("/health");
    expect(r.status).toBe(503);
    expect(r.body.status).toBe("unhealthy");
    expect(r.body.services.proof).toBe("down");
    expect(r.body.services.verification).toBe("up");
    expect(r.body.services.database).toBe("up");
  });
});

describe("/favicon.ico", () => {
  it("is an icon (an ICO holding a 32×32 PNG), cached for a day, with no key", async () => {
    const r = await fetch(`${stack.url}/favicon.ico`);
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("image/x-icon");
    expect(r.headers.get("cache-control")).toBe("public, max-age=86400");
    const b = Buffer.from(await r.arrayBuffer());
    expect([b.readUInt16LE(0), b.readUInt16LE(2), b.readUInt16LE(4), b[6], b[7]]).toEqual([0, 1, 1, 32, 32]);
    expect(b.readUInt32LE(14)).toBe(b.length - 22);
    expect(b.subarray(22, 30)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  });
});
