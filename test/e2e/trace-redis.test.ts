// With Redis configured, a request's trace shows its Redis round trips: the gateway's rate limit
// (and the verification service's send limit) as client spans under the request, named by command
// and purpose, never carrying a key (keys hold API key hashes and tenant ids).
import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { startTracing, type Tracing } from "@icv/platform";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { haveRedisBinary, privateRedis, type PrivateRedis } from "../support/private-servers.ts";
import { api, startStack, type Stack, type TenantKeys } from "../support/stack.ts";

const exporter = new InMemorySpanExporter();
let tracing: Tracing | undefined;
let redis: PrivateRedis | undefined;
let stack: Stack | undefined;
let t: TenantKeys;

beforeAll(async () => {
  if (!haveRedisBinary) return;
  redis = await privateRedis();
  tracing = await startTracing({ serviceName: "icv-test", exporter });
  stack = await startStack({ REDIS_URL: redis.url });
  t = await stack.tenant("Traced");
});
afterAll(async () => {
  await stack?.close();
  await tracing?.shutdown();
  await redis?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!haveRedisBinary)("traces with Redis (skipped: no redis-server binary)", () => {
  it("show the rate limit's Redis command under the request's span, without keys", async () => {
    // the client connects in the background: wait until a request is counted in Redis
    const c = api(stack!.url, t.testKey);
    for (let i = 0; i < 50 && !exporter.getFinishedSpans().some((s) => s.attributes["db.system.name"] === "redis"); i++) {
      exporter.reset();
      expect((await c.post("/api/v1/verifications", { type: "email", channel: "email", identifier: `trace.me+${i}@example.com` })).status).toBe(201);
      await sleep(100);
    }
    const spans = exporter.getFinishedSpans();
    const root = spans.find((s) => s.name === "POST /api/v1/verifications");
    expect(root, spans.map((s) => s.name).join(", ")).toBeDefined();
    const inTrace = spans.filter((s) => s.spanContext().traceId === root!.spanContext().traceId);
    const byId = new Map(inTrace.map((s) => [s.spanContext().spanId, s]));
    const ancestors = (s: ReadableSpan) => {
      const out: string[] = [];
      for (let p = byId.get(s.parentSpanContext?.spanId ?? ""); p; p = byId.get(p.parentSpanContext?.spanId ?? "")) out.push(p.name);
      return out;
    };
    const redisSpans = inTrace.filter((s) => s.attributes["db.system.name"] === "redis");
    const limit = redisSpans.find((s) => s.name === "EVAL rate_limit" && ancestors(s)[0] === root!.name);
    expect(limit, redisSpans.map((s) => `${s.name} < ${ancestors(s).join(" < ")}`).join("; ")).toBeDefined();
    expect(limit!.attributes).toEqual({ "db.system.name": "redis", "db.operation.name": "EVAL" });
    // the send limit of the verification service: under its RPC span, in the same trace
    expect(redisSpans.some((s) => ancestors(s).some((a) => a.startsWith("verification VerificationService/")))).toBe(true);
    for (const s of inTrace) {
      const text = JSON.stringify(s.attributes) + s.name;
      for (const secret of [t.testKey, t.tenantId, "trace.me", "icv:rl:"]) expect(text).not.toContain(secret);
    }
  });
});
