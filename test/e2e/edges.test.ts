// The attacker's requests that used to answer 500 (NUL characters, lone surrogates, deep JSON,
// year 0000, malformed ids and encodings) and the forwarded-header trust: what a tenant sees is
// a 400 validation_error naming the field, and X-Forwarded-For counts only when TRUST_PROXY says so.
import http from "node:http";
import { randomInt } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, startStack, type Stack } from "../support/stack.ts";
import { expectError, type ApiResponse } from "../support/expect-error.ts";

let stack: Stack;
let test: ReturnType<typeof api>;

beforeAll(async () => {
  stack = await startStack({ RATE_LIMIT_PER_MINUTE: "1000" });
  test = api(stack.url, (await stack.tenant("Edges")).testKey);
});
afterAll(() => stack?.close());

const phone = { type: "phone", channel: "telegram", identifier: "+37069199199" };

/** The 400 validation_error, with a detail for `field`. */
function expectInvalid(res: ApiResponse, field: string) {
  const e = expectError(res, 400, "validation_error");
  expect(
    e.details?.map((d: { field: string }) => d.field),
    res.text,
  ).toContain(field);
}

/** A request with raw bytes and headers as given (fetch would refuse or fix some of them). */
function raw(method: string, path: string, body?: Buffer | string, headers: Record<string, string> = {}, localAddress?: string): Promise<ApiResponse> {
  return new Promise((resolve, reject) => {
    const u = new URL(stack.url);
    const req = http.request({ host: u.hostname, port: u.port, method, path, headers, localAddress, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (typeof v === "string") h.set(k, v);
        resolve({ status: res.statusCode ?? 0, headers: h, body: json, text });
      });
    });
    req.on("error", reject);
    req.end(body);
  });
}

describe("NUL characters and lone surrogates are refused before anything is stored", () => {
  it("in body fields, metadata keys and values: 400 with the field", async () => {
    expectInvalid(await test.post("/api/v1/verifications", { ...phone, external_user_id: "user\u0000one" }), "body.external_user_id");
    expectInvalid(await test.post("/api/v1/verifications", { ...phone, client_metadata: { plan: "a\u0000b" } }), "body.client_metadata.plan");
    expectInvalid(await test.post("/api/v1/verifications", { ...phone, client_metadata: { "k\u0000": 1 } }), "body.client_metadata");
    const req = { assets: [{ type: "email", identifier: "a@example.com" }] };
    expectInvalid(await test.post("/api/v1/verification-requests", { ...req, reference_id: "ref\u0000" }), "body.reference_id");
    expectInvalid(await test.post("/api/v1/verification-requests", { ...req, action_context: { title: "\u0000" } }), "body.action_context.title");
    // written as JSON escapes, as an attacker sends them
    expectInvalid(
      await test.post("/api/v1/verifications", `{"type":"phone","channel":"telegram","identifier":"+37069199199","external_user_id":"\\ud800x"}`),
      "body.external_user_id",
    );
    expectInvalid(await test.post("/api/v1/verifications", `{"type":"phone","channel":"telegram","identifier":"\\udfff+37069199199"}`), "body.identifier");
    // nothing was made
    expect((await test.get("/api/v1/verifications")).body.pagination.total).toBe(0);
  });

  it("in path ids and query filters", async () => {
    expectInvalid(await test.get("/api/v1/verifications/ver_%00"), "path.id");
    expectInvalid(await test.get("/api/v1/verifications?external_user_id=a%00b"), "query.external_user_id");
    expectInvalid(await test.get("/api/v1/verifications/users/a%00b"), "path.externalUserId");
    expectInvalid(await test.get("/api/v1/verification-requests/by-reference/r%00"), "path.referenceId");
    expectInvalid(await test.get("/api/v1/verification-requests?reference_id=%00"), "query.reference_id");
  });
});

describe("ids are checked against their shape before any lookup", () => {
  it("a malformed or wrong-kind id is 400 path.id; a well-formed unknown one is still 404", async () => {
    expectInvalid(await test.get("/api/v1/verifications/nope"), "path.id");
    expectInvalid(await test.get(`/api/v1/verifications/vreq_01KGQ3Z3Y8R5F6G7H8J9K0M1N2`), "path.id");
    expectInvalid(await test.get(`/api/v1/verifications/ver_${"0".repeat(300)}`), "path.id");
    expectInvalid(await test.get("/api/v1/proofs/x/status"), "path.id");
    expectInvalid(await test.get("/api/v1/verification-requests/ver_01KGQ3Z3Y8R5F6G7H8J9K0M1N2"), "path.id");
    expectInvalid(await test.get("/api/v1/webhook-deliveries/x"), "path.id");
    expectInvalid(await test.get("/api/v1/webhook-deliveries?verification_request_id=x"), "query.verification_request_id");
    expectInvalid(await test.get("/api/v1/sessions/x"), "path.id");
    expectInvalid(await api(stack.url).get("/api/v1/verify/request/x"), "path.id");
    expectError(await test.get("/api/v1/verifications/ver_01KGQ3Z3Y8R5F6G7H8J9K0M1N2"), 404, "not_found");
  });
});

describe("JSON shape limits", () => {
  const nested = (depth: number): unknown => (depth === 0 ? "leaf" : { n: nested(depth - 1) });

  it("client_metadata nested 50 levels is 400 (not the RPC layer's recursion limit); a few levels are fine", async () => {
    expectInvalid(await test.post("/api/v1/verifications", { ...phone, client_metadata: nested(50) }), "body.client_metadata.n.n.n.n.n.n.n.n.n");
    expect((await test.post("/api/v1/verifications", { ...phone, client_metadata: nested(5) })).status).toBe(201);
  });

  it("too many keys in an object or items in an array is 400", async () => {
    const wide = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`k${i}`, i]));
    expectInvalid(await test.post("/api/v1/verifications", { ...phone, client_metadata: wide }), "body.client_metadata");
    expectInvalid(
      await test.post("/api/v1/verifications", { ...phone, client_metadata: { list: Array.from({ length: 200 }, () => 1) } }),
      "body.client_metadata.list",
    );
  });

  it("duplicate keys and numbers out of range are 400", async () => {
    const dup = `{"type":"phone","channel":"telegram","identifier":"+37069199199","type":"email"}`;
    expectInvalid(await test.post("/api/v1/verifications", dup), "body.type");
    expectInvalid(
      await test.post("/api/v1/verifications", `{"type":"phone","channel":"telegram","identifier":"+37069199199","client_metadata":{"n":1e400}}`),
      "body.client_metadata.n",
    );
    expectInvalid(
      await test.post(
        "/api/v1/verifications",
        `{"type":"phone","channel":"telegram","identifier":"+37069199199","client_metadata":{"n":123456789012345678901234567890}}`,
      ),
      "body.client_metadata.n",
    );
  });
});

describe("timestamps are years 1970 to 9999", () => {
  it("year 0000 in a filter is 400 with the field; 9999 works", async () => {
    expectInvalid(await test.get("/api/v1/verifications?created_after=0000-01-01T00:00:00Z"), "query.created_after");
    expectInvalid(await test.get("/api/v1/verifications?created_before=1969-12-31T23:59:59Z"), "query.created_before");
    expectInvalid(await api(stack.url).get("/api/v1/proofs/revoked?since=0000-01-01T00:00:00Z"), "query.since");
    expect((await test.get("/api/v1/verifications?created_before=9999-12-31T23:59:59Z")).status).toBe(200);
    expect((await api(stack.url).get("/api/v1/proofs/revoked?since=1970-01-01T00:00:00Z")).status).toBe(200);
  });
});

describe("bad encodings", () => {
  let auth: Record<string, string>;
  beforeAll(async () => {
    auth = { authorization: `Bearer ${(await stack.tenant("Encodings")).testKey}` };
  });

  it("a body that is not UTF-8 is 400; a non-UTF-8 charset is 415", async () => {
    const bad = Buffer.concat([Buffer.from('{"type":"phone","channel":"telegram","identifier":"+3706'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
    expectError(await raw("POST", "/api/v1/verifications", bad, { ...auth, "content-type": "application/json" }), 400, "validation_error");
    const surrogate = Buffer.concat([Buffer.from('{"external_user_id":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')]);
    expectError(await raw("POST", "/api/v1/verifications", surrogate, { ...auth, "content-type": "application/json" }), 400, "validation_error");
    expectError(
      await raw("POST", "/api/v1/verifications", JSON.stringify(phone), { ...auth, "content-type": "application/json; charset=latin1" }),
      415,
      "unsupported_media_type",
    );
  });

  it("bad percent-encoding in a path or a query is 400", async () => {
    expectError(await raw("GET", "/api/v1/verifications/ver_%zz", undefined, auth), 400, "validation_error");
    expectError(await raw("GET", "/api/v1/verifications/%C0%AF", undefined, auth), 400, "validation_error");
    expectInvalid(await raw("GET", "/api/v1/verifications?channel=%E0%A4", undefined, auth), "query.channel");
    expectInvalid(await raw("GET", "/api/v1/verifications?channel=%zz", undefined, auth), "query.channel");
    expectInvalid(await raw("GET", "/api/v1/proofs/revoked?since=%ED%A0%80", undefined, {}), "query.since");
  });
});

describe("forwarded headers are not trusted by default", () => {
  it("rotating X-Forwarded-For does not reset the failed-key limit of a client address", async () => {
    const s = await startStack({ AUTH_FAILURES_PER_MINUTE: "3" });
    try {
      // a loopback address of this test's own, so no other test shares its counter
      const from = `127.${randomInt(1, 250)}.${randomInt(1, 250)}.${randomInt(1, 250)}`;
      const u = new URL(s.url);
      const bad = (i: number) =>
        new Promise<number>((resolve, reject) => {
          http
            .get(
              {
                host: u.hostname,
                port: u.port,
                path: "/api/v1/verifications",
                localAddress: from,
                agent: false,
                headers: { authorization: "Bearer nope", "x-forwarded-for": `203.0.113.${i}` },
              },
              (res) => {
                res.resume();
                resolve(res.statusCode ?? 0);
              },
            )
            .on("error", reject);
        });
      const statuses: number[] = [];
      for (let i = 1; i <= 5; i++) statuses.push(await bad(i));
      expect(statuses).toEqual([401, 401, 401, 429, 429]);
    } finally {
      await s.close();
    }
  });
});
