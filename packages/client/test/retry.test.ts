// The client's retries and Idempotency-Key, against a local server that answers as the test says
// (a 429 with Retry-After, a 503 without, a Retry-After longer than the client waits): what a
// caller sees is one answer, the one after the waits, and a POST retried is the same request
// (same body, same Idempotency-Key) so the service never makes it twice.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createIcvClient, retryAfterMs } from "../src/index.ts";

interface Seen {
  method: string;
  url: string;
  key?: string;
  body: string;
  at: number;
}
type Answer = { status: number; headers?: Record<string, string>; body?: unknown };

let server: http.Server;
let base: string;
let seen: Seen[] = [];
let answers: Answer[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      seen.push({
        method: req.method ?? "",
        url: req.url ?? "",
        key: req.headers["idempotency-key"] as string | undefined,
        body: Buffer.concat(chunks).toString(),
        at: Date.now(),
      });
      const a = answers.shift() ?? { status: 200, body: { id: "ver_01" } };
      res.writeHead(a.status, { "content-type": "application/json", ...a.headers }).end(JSON.stringify(a.body ?? {}));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const reset = (...a: Answer[]) => {
  seen = [];
  answers = a;
};
const rateLimited = (seconds: string): Answer => ({
  status: 429,
  headers: { "retry-after": seconds },
  body: { error: { code: "rate_limited", message: "Too many requests", retry_after: Number(seconds) } },
});
const body = { type: "email" as const, channel: "email", identifier: "retry@example.com" };

describe("retries", () => {
  it("waits what a 429's Retry-After asks, then answers the retry; the POST is resent whole with the same Idempotency-Key", async () => {
    reset(rateLimited("1"), { status: 201, body: { id: "ver_01", status: "pending" } });
    const icv = createIcvClient({ baseUrl: base, apiKey: "pk_test_abc" });
    const r = await icv.POST("/api/v1/verifications", { body });
    expect(r.response.status).toBe(201);
    expect(r.data).toMatchObject({ id: "ver_01" });
    expect(seen).toHaveLength(2);
    expect(seen[1].at - seen[0].at).toBeGreaterThanOrEqual(950);
    expect(seen[0].key).toMatch(/^[0-9a-f-]{36}$/);
    expect(seen[1].key).toBe(seen[0].key);
    expect(JSON.parse(seen[1].body)).toEqual(body);
  });

  it("gives each POST its own key, keeps a key the caller set, and sends none on GET", async () => {
    reset();
    const icv = createIcvClient({ baseUrl: base, apiKey: "pk_test_abc" });
    await icv.POST("/api/v1/verifications", { body });
    await icv.POST("/api/v1/verifications", { body });
    await icv.POST("/api/v1/verifications", { body, headers: { "Idempotency-Key": "order-42" } });
    await icv.GET("/api/v1/verifications");
    expect(seen[0].key).not.toBe(seen[1].key);
    expect(seen[2].key).toBe("order-42");
    expect(seen[3]).toMatchObject({ method: "GET", key: undefined });
  });

  it("retries a 503 without Retry-After after a short backoff, and a Retry-After given as an HTTP date", async () => {
    reset({ status: 503, body: { error: { code: "service_unavailable", message: "down" } } }, { status: 200, body: { data: [] } });
    const retries: number[] = [];
    const icv = createIcvClient({ baseUrl: base, apiKey: "pk_test_abc", retry: { baseDelayMs: 50, onRetry: (i) => retries.push(i.status) } });
    expect((await icv.GET("/api/v1/verifications")).response.status).toBe(200);
    expect(retries).toEqual([503]);

    const inTwo = new Date(Date.now() + 2000).toUTCString();
    reset({ status: 503, headers: { "retry-after": inTwo } }, { status: 200, body: { data: [] } });
    expect((await icv.GET("/api/v1/verifications")).response.status).toBe(200);
    expect(seen[1].at - seen[0].at).toBeGreaterThanOrEqual(900);
  });

  it("answers the 429 itself (with its error) when Retry-After asks for longer than it waits, or the retries are spent", async () => {
    reset(rateLimited("120"));
    const icv = createIcvClient({ baseUrl: base, apiKey: "pk_test_abc" });
    const started = Date.now();
    const r = await icv.GET("/api/v1/verifications");
    expect(Date.now() - started).toBeLessThan(1000);
    expect(r.response.status).toBe(429);
    expect(r.response.headers.get("retry-after")).toBe("120");
    expect(r.error).toMatchObject({ error: { code: "rate_limited", retry_after: 120 } });
    expect(seen).toHaveLength(1);

    reset(rateLimited("0"), rateLimited("0"), rateLimited("0"));
    const few = createIcvClient({ baseUrl: base, apiKey: "pk_test_abc", retry: { retries: 2 } });
    expect((await few.GET("/api/v1/verifications")).response.status).toBe(429);
    expect(seen).toHaveLength(3);

    reset(rateLimited("0"));
    const none = createIcvClient({ baseUrl: base, apiKey: "pk_test_abc", retry: false });
    expect((await none.POST("/api/v1/verifications", { body })).response.status).toBe(429);
    expect(seen).toHaveLength(1);
    expect(seen[0].key).toBeDefined();
  });

  it("does not retry other errors (a 400 or a 500 is the caller's to see at once)", async () => {
    reset(
      { status: 400, body: { error: { code: "validation_error", message: "bad" } } },
      { status: 500, body: { error: { code: "internal_error", message: "x" } } },
    );
    const icv = createIcvClient({ baseUrl: base, apiKey: "pk_test_abc" });
    expect((await icv.POST("/api/v1/verifications", { body })).response.status).toBe(400);
    expect((await icv.GET("/api/v1/verifications")).response.status).toBe(500);
    expect(seen).toHaveLength(2);
  });
});

describe("Retry-After and the options", () => {
  it("reads seconds and HTTP dates, and nothing else", () => {
    const now = Date.parse("2026-11-26T00:00:00Z");
    expect(retryAfterMs("3", now)).toBe(3000);
    expect(retryAfterMs("Thu, 26 Nov 2026 00:00:05 GMT", now)).toBe(5000);
    expect(retryAfterMs("Wed, 25 Nov 2026 00:00:00 GMT", now)).toBe(0);
    expect(retryAfterMs("soon", now)).toBeUndefined();
    expect(retryAfterMs(null, now)).toBeUndefined();
  });

  it("refuses a base URL that is not http(s) and a key that is not an API key (before sending anything)", () => {
    expect(() => createIcvClient({ baseUrl: "ftp://x" })).toThrow(/baseUrl/);
    expect(() => createIcvClient({ baseUrl: base, apiKey: "whsec_abc" })).toThrow(/pk_live_/);
  });
});
