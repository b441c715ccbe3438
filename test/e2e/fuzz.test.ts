// Property-based edge suite (fast-check): malformed bodies, queries, paths, headers and encodings
// for every operation of /api/openapi.json (a new route is covered without being listed), plus
// raw HTTP that clients refuse to send. No answer may be a 5xx, and every 4xx has the error shape
// {error: {code, message, request_id}} with request_id equal to X-Request-Id.
//
// FUZZ_REQUESTS (default 2400) sets the size of a run, FUZZ_SEED replays one.
import http from "node:http";
import net from "node:net";
import { randomInt } from "node:crypto";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, startStack, type Stack } from "../support/stack.ts";
import { jwtFor, operations, RAW_REQUESTS, requestFor, type FuzzRequest, type Operation, type Pool } from "../support/fuzz.ts";

const TOTAL = Number(process.env.FUZZ_REQUESTS ?? 2400);
const SEED = Number(process.env.FUZZ_SEED ?? randomInt(1, 2 ** 31 - 1));
const CONCURRENCY = 4;
// a loopback address of this run's own: per-IP limits and throttles share no counter with other tests
const FROM = `127.${randomInt(1, 250)}.${randomInt(1, 250)}.${randomInt(1, 250)}`;

let stack: Stack;
let pool: Pool;
/** A real proof (test) and the key that may validate it: the JWT fuzz mutates it. */
let proof: { token: string; testKey: string; liveKey: string };
let doc: Record<string, any>;

beforeAll(async () => {
  stack = await startStack({
    RATE_LIMIT_PER_MINUTE: "1000000",
    AUTH_FAILURES_PER_MINUTE: "1000000",
    SSE_MAX_CONNECTIONS_PER_TENANT: "1000",
  });
  const tenants = await Promise.all([1, 2, 3].map((i) => stack.tenant(`Fuzz ${i}`)));
  const c = api(stack.url, tenants[0].testKey);
  const v = await c.post("/api/v1/verifications", {
    type: "phone",
    channel: "telegram",
    identifier: "+37069199199",
    external_user_id: "fuzz-user",
  });
  const done = await c.post("/api/v1/verifications", { type: "email", channel: "email", identifier: "fuzz@example.com" });
  const verified = await c.post(`/api/v1/verifications/${done.body.id}/test-verify`);
  proof = { token: String(verified.body.proof_token), testKey: tenants[0].testKey, liveKey: tenants[1].liveKey };
  const rq = await c.post("/api/v1/verification-requests", {
    assets: [{ type: "email", identifier: "fuzz@example.com" }, { type: "phone" }],
    reference_id: "fuzz-ref",
  });
  const token = String(rq.body.verification_url ?? "").split("#")[1] ?? "";
  pool = {
    ids: [v.body.id, done.body.id, rq.body.id, "ver_01KGQ3Z3Y8R5F6G7H8J9K0M1N2"].filter(Boolean),
    keys: tenants.flatMap((t) => [t.testKey, t.liveKey]),
    tokens: [token.replace(/^token=/, ""), token].filter(Boolean),
  };
  doc = (await api(stack.url).get("/api/openapi.json")).body;
}, 120_000);
afterAll(() => stack?.close());

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });

function send(r: FuzzRequest): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const u = new URL(stack.url);
    const req = http.request(
      { host: u.hostname, port: u.port, method: r.method, path: r.path, headers: r.headers, agent, localAddress: FROM, timeout: 15_000 },
      (res) => {
        if (String(res.headers["content-type"]).startsWith("text/event-stream")) {
          res.destroy(); // a live stream: its status and headers are the answer
          return resolve({ status: res.statusCode ?? 0, headers: res.headers, text: "" });
        }
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString("utf8") }));
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error("no answer within 15 s")));
    req.on("error", reject);
    req.end(r.body);
  });
}

/** Raw bytes over a socket of its own; answers the status line, headers and body as text. */
function sendRaw(text: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const u = new URL(stack.url);
    const socket = net.connect({ host: u.hostname, port: Number(u.port), localAddress: FROM });
    const chunks: Buffer[] = [];
    socket.setTimeout(10_000, () => socket.destroy(new Error("no answer within 10 s")));
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.on("error", reject);
    socket.on("close", () => {
      const all = Buffer.concat(chunks).toString("latin1");
      const [head, ...rest] = all.split("\r\n\r\n");
      const [statusLine, ...lines] = head.split("\r\n");
      const headers: http.IncomingHttpHeaders = {};
      for (const l of lines) headers[l.slice(0, l.indexOf(":")).toLowerCase()] = l.slice(l.indexOf(":") + 1).trim();
      resolve({ status: Number(statusLine.split(" ")[1] ?? 0), headers, text: rest.join("\r\n\r\n") });
    });
    socket.end(Buffer.from(text, "latin1"));
  });
}

/** What is wrong with an answer, or undefined: a 5xx, or a 4xx without the error shape. */
function problem(a: Answer): string | undefined {
  if (a.status >= 500 || a.status < 100) return `status ${a.status}`;
  if (a.status < 400) return undefined;
  if (!String(a.headers["content-type"] ?? "").startsWith("application/json")) return `${a.status} with content-type ${a.headers["content-type"]}`;
  let body: any;
  try {
    body = JSON.parse(a.text);
  } catch {
    return `${a.status} with a body that is not JSON`;
  }
  const e = body?.error;
  if (typeof e?.code !== "string" || typeof e.message !== "string" || !e.message || typeof e.request_id !== "string")
    return `${a.status} without the error shape`;
  if (e.request_id !== a.headers["x-request-id"]) return `${a.status} whose request_id is not X-Request-Id`;
  return undefined;
}

/** Runs the requests a few at a time. */
async function runAll(reqs: FuzzRequest[], failures: string[]): Promise<Map<number, number>> {
  const statuses = new Map<number, number>();
  let next = 0;
  const worker = async () => {
    while (next < reqs.length) {
      const r = reqs[next++];
      const big = (r.body?.length ?? 0) > 10_240;
      const a = await send(r).catch((e: NodeJS.ErrnoException) => (big && (e.code === "ECONNRESET" || e.code === "EPIPE") ? undefined : e));
      if (a === undefined) continue; // the server stopped an over-large upload after answering 413
      const why = a instanceof Error ? `no answer: ${a.message}` : problem(a);
      if (!(a instanceof Error)) statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
      if (why)
        failures.push(
          `${why}: ${r.method} ${r.path.slice(0, 200)} ${JSON.stringify(r.headers).slice(0, 300)} body=${JSON.stringify(r.body?.toString("latin1").slice(0, 300))}${a instanceof Error ? "" : ` → ${a.text.slice(0, 200)}`}`,
        );
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return statuses;
}

describe("fuzzing every route", () => {
  it(`answers ≥ 2,000 malformed requests with no 5xx and the error shape on every 4xx`, async () => {
    const t0 = Date.now();
    const ops: Operation[] = [
      ...operations(doc),
      // the hosted page's static routes (not API operations, so not in the document)
      { method: "GET", path: "/verify/{id}", auth: "public", pathParams: ["id"], query: [] },
      { method: "GET", path: "/hosted/{file}", auth: "public", pathParams: ["file"], query: [] },
    ];
    expect(ops.length).toBeGreaterThan(40);
    const per = Math.ceil(TOTAL / ops.length);
    const reqs = ops.flatMap((op, i) => fc.sample(requestFor(doc, op, pool), { numRuns: per, seed: SEED + i }));
    const failures: string[] = [];
    const statuses = await runAll(reqs, failures);
    let raw = 0;
    for (const text of RAW_REQUESTS) {
      const a = await sendRaw(text).catch((e: Error) => e);
      raw++;
      const why = a instanceof Error ? `no answer: ${a.message}` : problem(a);
      if (why) failures.push(`${why}: raw ${JSON.stringify(text.slice(0, 120))}`);
    }
    const count = reqs.length + raw;
    const summary = [...statuses]
      .sort(([a], [b]) => a - b)
      .map(([s, n]) => `${s}×${n}`)
      .join(" ");
    console.log(
      `fuzz: ${count} requests over ${ops.length} operations in ${((Date.now() - t0) / 1000).toFixed(1)} s (seed ${SEED}; FUZZ_SEED=${SEED} replays): ${summary}`,
    );
    expect(count).toBeGreaterThanOrEqual(2000);
    expect(failures.slice(0, 10), `${failures.length} bad answers (seed ${SEED})`).toEqual([]);
  }, 240_000);
});

describe("fuzzing the tokens validate reads", () => {
  it("answers generated JWT headers and payloads (NUL, lone surrogates, huge kid, wrong types, odd encodings) with no 5xx, and accepts none but the token as issued", async () => {
    const JWTS = Math.max(400, Math.floor(TOTAL / 4));
    const [h, p, s] = proof.token.split(".");
    const real = { header: JSON.parse(Buffer.from(h, "base64url").toString()), payload: JSON.parse(Buffer.from(p, "base64url").toString()), signature: s };
    const tokens = fc.sample(jwtFor(real), { numRuns: JWTS, seed: SEED });
    const reqs: FuzzRequest[] = tokens.map((token, i) => ({
      op: "POST /api/v1/proofs/validate (generated JWT)",
      method: "POST",
      path: "/api/v1/proofs/validate",
      headers: { "content-type": "application/json", authorization: `Bearer ${i % 2 ? proof.liveKey : proof.testKey}` },
      body: Buffer.from(JSON.stringify({ proof_token: token })),
    }));
    const failures: string[] = [];
    const statuses = await runAll(reqs, failures);
    // none is valid but a token that is exactly the one issued (a generator may leave it whole)
    const accepted: string[] = [];
    for (const [i, token] of tokens.entries()) {
      if (token === proof.token || i % 2) continue;
      const r = await api(stack.url, proof.testKey).post("/api/v1/proofs/validate", { proof_token: token });
      if (r.status === 200 && r.body.valid) accepted.push(token.slice(0, 200));
    }
    const summary = [...statuses].map(([st, n]) => `${st}×${n}`).join(" ");
    console.log(`fuzz: ${reqs.length} generated JWTs (seed ${SEED}): ${summary}`);
    expect(reqs.length).toBeGreaterThanOrEqual(400);
    expect(failures.slice(0, 10), `${failures.length} bad answers (seed ${SEED})`).toEqual([]);
    expect(accepted, `forged tokens accepted (seed ${SEED})`).toEqual([]);
    // and the token as issued still is
    expect((await api(stack.url, proof.testKey).post("/api/v1/proofs/validate", { proof_token: proof.token })).body.valid).toBe(true);
  }, 240_000);
});
