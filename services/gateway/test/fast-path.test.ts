// The fast path of the hottest routes (fast-path.ts) answers exactly what the Express chain
// answers: two servers on the same deps, one with the gateway's listener (fast path first), one
// with the Express app alone, get the same requests; status, headers and body must match (Date
// aside; each request names its X-Request-Id). It takes only what it can answer that way: the rest
// goes to Express before anything was counted.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ConnectError, Code } from "@connectrpc/connect";
import { VerificationSchema } from "@icv/contracts/gen/icv/verification/v1/verification_pb.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger, httpRequests, parseConfig, type TlsIdentity } from "@icv/platform";
import { buildApp } from "../src/app.ts";
import { fastPath } from "../src/fast-path.ts";
import { generateApiKey, hashApiKey } from "../src/api-keys.ts";
import type { Clients } from "../src/clients.ts";
import { makeClients } from "../src/clients.ts";
import { MemoryRateLimiter } from "../src/rate-limit.ts";
import type { GatewayStore } from "../src/store.ts";

const LIMIT = 1000;
const KNOWN = "ver_01JAAAAAAAAAAAAAAAAAAAAAAA";
const CRASH = "ver_01JBBBBBBBBBBBBBBBBBBBBBBB";
const at = new Date("2026-02-04T10:00:00.000Z");
const key = generateApiKey("test");
const revoked = generateApiKey("test");

const verified = () =>
  create(VerificationSchema, {
    id: KNOWN,
    type: "phone",
    channel: "telegram",
    status: "verified",
    identifier: "+37069199199",
    createdAt: timestampFromDate(at),
    verifiedAt: timestampFromDate(at),
    proof: { token: "eyJ.x.y", expiresAt: timestampFromDate(new Date(at.getTime() + 86_400_000)) },
    attempts: 1,
    maxAttempts: 5,
    testMode: true,
    method: "test",
    updatedAt: timestampFromDate(at),
  });

/** What the services answer: one verification (made, read, test-verified), and a validation that depends on the token. */
function fakeClients(config: ReturnType<typeof parseConfig>, calls: string[]): Clients {
  const real = makeClients(config, {} as TlsIdentity, createLogger({ level: "silent" }));
  const known = (id: string) => {
    if (id === CRASH) throw new Error("boom");
    if (id !== KNOWN) throw new ConnectError("verification not found", Code.NotFound);
  };
  return {
    ...real,
    verification: {
      async getVerification(req: { id: string; scope?: { tenantId: string } }) {
        calls.push(`get ${req.id} ${req.scope?.tenantId}`);
        known(req.id);
        return { verification: verified() };
      },
      async createVerification(req: { identifier: string; externalUserId?: string; scope?: { tenantId: string } }) {
        calls.push(`create ${req.identifier} ${req.externalUserId} ${req.scope?.tenantId}`);
        if (req.identifier === "+0") throw new ConnectError("invalid identifier", Code.InvalidArgument);
        const v = verified();
        return {
          verification: create(VerificationSchema, {
            ...v,
            status: "pending",
            verifiedAt: undefined,
            proof: undefined,
            method: "",
            externalUserId: req.externalUserId,
          }),
        };
      },
      async testVerify(req: { id: string; scope?: { tenantId: string } }) {
        calls.push(`test-verify ${req.id} ${req.scope?.tenantId}`);
        known(req.id);
        return { verification: verified() };
      },
      async validateProof(req: { proofToken: string; identifier?: string }) {
        calls.push(`validate ${req.proofToken}`);
        if (req.proofToken === "down") throw new ConnectError("unavailable", Code.Unavailable);
        if (req.proofToken === "bad") return { valid: false, reason: "malformed", message: "the token is not a well-formed proof" };
        return {
          valid: true,
          verificationId: KNOWN,
          type: "phone",
          channel: "telegram",
          verifiedAt: timestampFromDate(at),
          expiresAt: timestampFromDate(at),
          testMode: true,
          method: "test",
        };
      },
    } as unknown as Clients["verification"],
  };
}

interface Served {
  url: string;
  calls: string[];
  close(): Promise<void>;
}

async function serve(withFastPath: boolean, limit = LIMIT): Promise<Served> {
  const config = parseConfig({ PUBLIC_BASE_URL: "https://api.icv.test", RATE_LIMIT_PER_MINUTE: String(limit) });
  const calls: string[] = [];
  const store = {
    async keyByHash(hash: string) {
      calls.push("key lookup");
      if (hash === hashApiKey(key.key)) return { id: "key_1", tenant_id: "ten_1", environment: "test", revoked_at: null };
      if (hash === hashApiKey(revoked.key)) return { id: "key_2", tenant_id: "ten_1", environment: "test", revoked_at: new Date() };
      return undefined;
    },
    touchKey: async () => {},
  } as unknown as GatewayStore;
  const { app, listener } = buildApp({
    config,
    logger: createLogger({ level: "silent" }),
    store,
    clients: fakeClients(config, calls),
    limiter: new MemoryRateLimiter(),
  });
  const server = http.createServer(withFastPath ? listener : app);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

let fast: Served;
let plain: Served;
beforeAll(async () => {
  [fast, plain] = await Promise.all([serve(true), serve(false)]);
});
afterAll(async () => {
  await fast?.close();
  await plain?.close();
});

let n = 0;
interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** The same request to both servers (one after the other, so each keeps its own count). */
async function both(
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
  servers = [fast, plain],
): Promise<[Answer, Answer]> {
  const requestId = `fast-path-${++n}`;
  const ask = async (base: string): Promise<Answer> => {
    const res = await fetch(base + path, {
      method: init.method ?? "GET",
      headers: { authorization: `Bearer ${key.key}`, "x-request-id": requestId, ...init.headers },
      body: init.body,
    });
    const headers: Record<string, string> = {};
    res.headers.forEach((v, k) => {
      if (k !== "date") headers[k] = v;
    });
    return { status: res.status, headers, body: await res.text() };
  };
  return [await ask(servers[0].url), await ask(servers[1].url)];
}

/** Asserts both servers answered the same; answers that answer. */
async function same(path: string, init?: Parameters<typeof both>[1], servers?: Served[]): Promise<Answer> {
  const [a, b] = await both(path, init, servers);
  expect(a).toEqual(b);
  return a;
}

const validate = (body: unknown, headers: Record<string, string> = {}) =>
  same("/api/v1/proofs/validate", {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });

/** Fresh servers per case that counts requests against the limit. */
describe("the fast path answers what Express answers", () => {
  it("GET a verification: the first request of a key (its lookup) and the ones after it", async () => {
    const first = await same(`/api/v1/verifications/${KNOWN}`);
    expect(first.status).toBe(200);
    expect(first.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(JSON.parse(first.body)).toMatchObject({ id: KNOWN, status: "verified", proof: { token: "eyJ.x.y" } });
    const again = await same(`/api/v1/verifications/${KNOWN}`);
    expect(again.headers["x-ratelimit-remaining"]).toBe(String(LIMIT - 2));
    expect(again.headers["x-request-id"]).toBe(`fast-path-${n}`);
    // the fast server looked the key up once, like the other one (the key cache is shared)
    expect(fast.calls.filter((c) => c === "key lookup")).toHaveLength(1);
    expect(fast.calls.filter((c) => c.startsWith("get"))).toEqual([`get ${KNOWN} ten_1`, `get ${KNOWN} ten_1`]);
  });

  it("GET errors: not found, a bad id, an internal error", async () => {
    expect((await same("/api/v1/verifications/ver_01JZZZZZZZZZZZZZZZZZZZZZZZ")).status).toBe(404);
    expect((await same("/api/v1/verifications/ver_nope")).status).toBe(400);
    expect((await same("/api/v1/verifications/users")).status).not.toBe(200);
    const crash = await same(`/api/v1/verifications/${CRASH}`);
    expect(crash.status).toBe(500);
    expect(JSON.parse(crash.body).error.code).toBe("internal_error");
  });

  it("validate: valid, invalid, and every body problem the JSON rules answer", async () => {
    expect(JSON.parse((await validate({ proof_token: "eyJ.a.b", identifier: "+37069199199" })).body)).toMatchObject({ valid: true });
    expect(JSON.parse((await validate({ proof_token: "bad" })).body)).toMatchObject({ valid: false, reason: "malformed" });
    for (const body of [
      "{",
      '{"proof_token":"a","proof_token":"b"}',
      "{}",
      '{"proof_token":"a","extra":1}',
      '{"proof_token":"a\\u0000"}',
      "[1]",
      '"text"',
      "   ",
      '{"proof_token":5}',
    ]) {
      const a = await validate(body);
      expect(a.status, body).toBeGreaterThanOrEqual(400);
    }
    expect((await validate([0xff, 0xfe].map((b) => String.fromCharCode(b)).join(""))).status).toBe(400);
    expect((await validate({ proof_token: "down" })).status).toBe(503);
  });

  it("validate with other content types, charsets, codings and an Idempotency-Key: Express answers both", async () => {
    const body = { proof_token: "eyJ.a.b" };
    expect((await validate(body, { "content-type": "application/json; charset=utf-8" })).status).toBe(200);
    expect((await validate(body, { "content-type": 'Application/JSON; charset="UTF-8"' })).status).toBe(200);
    expect((await validate(body, { "content-type": "application/json; charset=latin1" })).status).toBe(415);
    expect((await validate(body, { "content-type": "text/plain" })).status).toBe(415);
    expect((await validate("x".repeat(11_000))).status).toBe(413);
    expect((await validate(body, { "content-encoding": "br" })).status).toBeGreaterThanOrEqual(400);
  });

  it("create and test-verify: made, verified, and their errors", async () => {
    const made = (body: unknown) =>
      same("/api/v1/verifications", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: typeof body === "string" ? body : JSON.stringify(body),
      });
    const ok = await made({ type: "phone", channel: "telegram", identifier: "+37069199199", external_user_id: "u1" });
    expect(ok.status).toBe(201);
    expect(JSON.parse(ok.body)).toMatchObject({ id: KNOWN, status: "pending", external_user_id: "u1" });
    expect(fast.calls).toContain("create +37069199199 u1 ten_1");
    expect((await made({ type: "phone", channel: "telegram" })).status).toBe(400);
    expect((await made({ type: "phone", channel: "telegram", identifier: "+37069199199", surprise: 1 })).status).toBe(400);
    expect((await made({ type: "phone", channel: "telegram", identifier: "+0" })).status).toBe(400);
    expect((await made("{")).status).toBe(400);
    const done = await same(`/api/v1/verifications/${KNOWN}/test-verify`, { method: "POST" });
    expect(done.status).toBe(200);
    expect(JSON.parse(done.body)).toMatchObject({ id: KNOWN, status: "verified", proof_token: "eyJ.x.y", test_mode: true });
    expect((await same("/api/v1/verifications/ver_01JZZZZZZZZZZZZZZZZZZZZZZZ/test-verify", { method: "POST" })).status).toBe(404);
    expect((await same("/api/v1/verifications/ver_nope/test-verify", { method: "POST" })).status).toBe(400);
    expect((await same(`/api/v1/verifications/${CRASH}/test-verify`, { method: "POST" })).status).toBe(500);
  });

  it("keys: missing, malformed, unknown and revoked keys are Express's (and counted there)", async () => {
    for (const authorization of ["", "Bearer nope", `Bearer ${generateApiKey("live").key}`, `Bearer ${revoked.key}`]) {
      const [a, b] = await both(`/api/v1/verifications/${KNOWN}`, { headers: { authorization } });
      expect(a, authorization).toEqual(b);
      expect(a.status).toBe(401);
    }
  });

  it("conditional GETs, a query string and HEAD go to Express", async () => {
    await same(`/api/v1/verifications/${KNOWN}`, { headers: { "if-none-match": "*" } });
    await same(`/api/v1/verifications/${KNOWN}`, { headers: { "if-modified-since": at.toUTCString() } });
    expect((await same(`/api/v1/verifications/${KNOWN}?x=1`)).status).toBe(200);
    expect((await same(`/api/v1/verifications/${KNOWN}`, { method: "HEAD" })).status).toBe(200);
  });

  it("past the rate limit: 429 with Retry-After and the same body, and refusals count nothing", async () => {
    const pair = await Promise.all([serve(true, 3), serve(false, 3)]);
    try {
      const answers: Answer[] = [];
      for (let i = 0; i < 5; i++) answers.push(await same(`/api/v1/verifications/${KNOWN}`, undefined, pair));
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 429, 429]);
      expect(answers.map((a) => a.headers["x-ratelimit-remaining"])).toEqual(["2", "1", "0", "0", "0"]);
      expect(answers[4].headers["retry-after"]).toBeDefined();
      expect(JSON.parse(answers[4].body).error).toMatchObject({ code: "rate_limited", request_id: `fast-path-${n}` });
      const v = await same("/api/v1/proofs/validate", { method: "POST", headers: { "content-type": "application/json" }, body: '{"proof_token":"x"}' }, pair);
      expect(v.status).toBe(429);
      // nothing reached the service past the limit
      expect(pair[0].calls.filter((c) => !c.startsWith("key"))).toHaveLength(3);
    } finally {
      await Promise.all(pair.map((p) => p.close()));
    }
  });

  it("records the same metrics under the route pattern", async () => {
    const count = async () => (await httpRequests.get()).values.filter((v) => v.labels.route === "/api/v1/verifications/:id").reduce((s, v) => s + v.value, 0);
    const before = await count();
    await same(`/api/v1/verifications/${KNOWN}`);
    // one request to each server, both under the pattern (the close event may come a moment after the answer)
    for (let i = 0; i < 50 && (await count()) < before + 2; i++) await new Promise((r) => setTimeout(r, 10));
    expect(await count()).toBe(before + 2);
  });
});

describe("what the fast path takes", () => {
  it("a cached live key's plain GET, validate, create and test-verify; everything else, and any first request of a key, goes to Express", async () => {
    const config = parseConfig({ PUBLIC_BASE_URL: "https://api.icv.test" });
    const calls: string[] = [];
    const store = {
      keyByHash: async (h: string) => (h === hashApiKey(key.key) ? { id: "key_1", tenant_id: "ten_1", environment: "test", revoked_at: null } : undefined),
      touchKey: async () => {},
    } as unknown as GatewayStore;
    const logger = createLogger({ level: "silent" });
    const limiter = new MemoryRateLimiter();
    const { app, auth, routes } = buildApp({ config, logger, store, clients: fakeClients(config, calls), limiter });
    const fp = fastPath({ routes, auth, limiter, perMinute: 1000, logger });
    let taken: boolean | undefined;
    const server = http.createServer((req, res) => {
      taken = fp(req, res);
      if (!taken) app(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const ask = async (path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}) => {
      const res = await fetch(base + path, {
        method: init.method ?? "GET",
        headers: { authorization: `Bearer ${key.key}`, ...init.headers },
        body: init.body,
      });
      await res.arrayBuffer();
      return taken;
    };
    const json = { "content-type": "application/json" };
    const token = JSON.stringify({ proof_token: "eyJ.a.b" });
    try {
      expect(await ask(`/api/v1/verifications/${KNOWN}`), "the key's first request").toBe(false);
      expect(await ask(`/api/v1/verifications/${KNOWN}`)).toBe(true);
      expect(await ask("/api/v1/proofs/validate", { method: "POST", headers: json, body: token })).toBe(true);
      expect(
        await ask("/api/v1/proofs/validate", {
          method: "POST",
          headers: { "content-type": "application/json; charset=utf-8" },
          body: token,
        }),
      ).toBe(true);
      const made = JSON.stringify({ type: "phone", channel: "telegram", identifier: "+37069199199" });
      expect(await ask("/api/v1/verifications", { method: "POST", headers: json, body: made })).toBe(true);
      expect(await ask(`/api/v1/verifications/${KNOWN}/test-verify`, { method: "POST" })).toBe(true);
      const express: Record<string, [string, Parameters<typeof ask>[1]?]> = {
        "a bad id": [`/api/v1/verifications/ver_nope`],
        "a literal route": ["/api/v1/verifications/users"],
        "a query string": [`/api/v1/verifications/${KNOWN}?a=b`],
        "a trailing slash": [`/api/v1/verifications/${KNOWN}/`],
        "another case": [`/API/v1/verifications/${KNOWN}`],
        "an escaped id": [`/api/v1/verifications/%76er_01JAAAAAAAAAAAAAAAAAAAAAAA`],
        "a conditional GET": [`/api/v1/verifications/${KNOWN}`, { headers: { "if-none-match": "x" } }],
        HEAD: [`/api/v1/verifications/${KNOWN}`, { method: "HEAD" }],
        "no key": [`/api/v1/verifications/${KNOWN}`, { headers: { authorization: "" } }],
        "an unknown key": [`/api/v1/verifications/${KNOWN}`, { headers: { authorization: `Bearer ${generateApiKey("test").key}` } }],
        "an Idempotency-Key": ["/api/v1/proofs/validate", { method: "POST", headers: { ...json, "idempotency-key": "k1" }, body: token }],
        "another charset": ["/api/v1/proofs/validate", { method: "POST", headers: { "content-type": "application/json; charset=latin1" }, body: token }],
        "a content coding": ["/api/v1/proofs/validate", { method: "POST", headers: { ...json, "content-encoding": "identity" }, body: token }],
        "another type": ["/api/v1/proofs/validate", { method: "POST", headers: { "content-type": "text/plain" }, body: token }],
        "a body over the limit": ["/api/v1/proofs/validate", { method: "POST", headers: json, body: "x".repeat(10_241) }],
        "no body": ["/api/v1/proofs/validate", { method: "POST", headers: json }],
        "a create with an Idempotency-Key": ["/api/v1/verifications", { method: "POST", headers: { ...json, "idempotency-key": "k2" }, body: made }],
        "a create of another type": ["/api/v1/verifications", { method: "POST", headers: { "content-type": "text/plain" }, body: made }],
        "a test-verify with a body": [`/api/v1/verifications/${KNOWN}/test-verify`, { method: "POST", headers: json, body: "{}" }],
        "a test-verify with an Idempotency-Key": [`/api/v1/verifications/${KNOWN}/test-verify`, { method: "POST", headers: { "idempotency-key": "k3" } }],
        "a test-verify of a bad id": ["/api/v1/verifications/ver_nope/test-verify", { method: "POST" }],
        "a test-verify with a query": [`/api/v1/verifications/${KNOWN}/test-verify?a=b`, { method: "POST" }],
      };
      for (const [what, [path, init]] of Object.entries(express)) {
        expect(await ask(path, init), what).toBe(false);
      }
      // a GET that says it has a body (fetch sends none with a GET)
      await new Promise<void>((resolve, reject) => {
        const req = http.request(
          `${base}/api/v1/verifications/${KNOWN}`,
          { method: "GET", headers: { authorization: `Bearer ${key.key}`, "content-length": "2", "content-type": "application/json" } },
          (res) => {
            res.resume();
            res.on("end", resolve);
          },
        );
        req.on("error", reject);
        req.end("{}");
      });
      expect(taken, "a GET with a body").toBe(false);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
