// What an SRE sees of the all-in-one: Prometheus text at GET /metrics on the admin listener (never
// on the public port) with RED metrics per route pattern and per RPC, and no id in any label;
// and one trace per request, from the gateway through every RPC hop into SQL.
import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { ProofService } from "@icv/contracts/gen/icv/proof/v1/proof_service_pb.ts";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { createLogger, parseConfig, rpcClient, serviceIdentity, startTracing, type Tracing } from "@icv/platform";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, startStack, type Stack, type TenantKeys } from "../support/stack.ts";

const exporter = new InMemorySpanExporter();
let tracing: Tracing | undefined;
let stack: Stack;
let t: TenantKeys;
let verificationId: string;
let tenantIds: string[];

beforeAll(async () => {
  tracing = await startTracing({ serviceName: "icv-test", exporter });
  stack = await startStack();
  t = await stack.tenant("Observed");
  tenantIds = [t.tenantId];
  const c = api(stack.url, t.testKey);
  const created = await c.post("/api/v1/verifications", { type: "phone", channel: "telegram", identifier: "+370 691 99199" });
  expect(created.status).toBe(201);
  verificationId = created.body.id;
  expect((await c.get(`/api/v1/verifications/${verificationId}`)).status).toBe(200);
  exporter.reset();
  expect((await c.post(`/api/v1/verifications/${verificationId}/test-verify`)).status).toBe(200);
  expect((await c.get(`/api/v1/verifications/ver_01JZZZZZZZZZZZZZZZZZZZZZZZ`)).status).toBe(404);
  expect((await api(stack.url).get("/no/such/path/123")).status).toBe(404);
  // a service calling an RPC it is not allowed (session may not mint proofs): refused and counted
  const identity = await serviceIdentity(parseConfig(stack.env), "session", createLogger({ level: "silent" }));
  const asSession = rpcClient(ProofService, stack.services.proof.url, identity);
  await expect(
    asSession.issueProof({
      scope: { tenantId: t.tenantId, environment: Environment.TEST },
      proofId: "prf_x",
      type: "phone",
      channel: "sms",
      identifier: "+15555550100",
      method: "otp",
    }),
  ).rejects.toThrow(/may not call/);
  identity.close();
});
afterAll(async () => {
  await stack?.close();
  await tracing?.shutdown();
});

/** Parses Prometheus text into samples: name, labels, value. */
function samples(text: string) {
  const out: { name: string; labels: Record<string, string>; value: number }[] = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not Prometheus text: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

describe("GET /metrics", () => {
  it("answers Prometheus text on the admin listener, with the named series of every co-hosted service", async () => {
    const res = await fetch(`${stack.gateway.adminUrl}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const all = samples(await res.text());
    const find = (name: string, labels: Record<string, string> = {}) =>
      all.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));

    // HTTP RED by route pattern
    expect(
      find("icv_http_requests_total", {
        service: "gateway",
        method: "POST",
        route: "/api/v1/verifications/:id/test-verify",
        code: "200",
      })[0]?.value,
    ).toBe(1);
    expect(find("icv_http_requests_total", { method: "GET", route: "/api/v1/verifications/:id", code: "404" })[0]?.value).toBe(1);
    expect(find("icv_http_requests_total", { route: "unmatched", code: "404" })[0]?.value).toBeGreaterThanOrEqual(1);
    expect(find("icv_http_request_duration_seconds_count", { route: "/api/v1/verifications/:id/test-verify" })[0]?.value).toBe(1);
    // RPC RED per service and method, with the refused call under its gRPC code
    expect(find("icv_rpc_server_requests_total", { service: "proof", method: "ProofService/IssueProof", code: "ok" })[0]?.value).toBe(1);
    expect(find("icv_rpc_server_requests_total", { service: "proof", method: "ProofService/IssueProof", code: "permission_denied" })[0]?.value).toBe(1);
    expect(find("icv_rpc_server_duration_seconds_bucket", { service: "verification" }).length).toBeGreaterThan(0);
    expect(find("icv_rpc_refused_total", { caller: "session", service: "proof", method: "ProofService/IssueProof" })[0]?.value).toBe(1);
    expect(find("icv_proofs_issued_total", { method: "test" })[0]?.value).toBe(1);
    // outbox lag per schema, webhook queue, SSE streams, default process metrics
    for (const schema of ["proof", "verification", "webhook", "gateway"]) expect(find("icv_outbox_lag_seconds", { schema }), schema).toHaveLength(1);
    expect(find("icv_webhook_queue_depth")).toHaveLength(1);
    expect(find("icv_sse_streams", { kind: "api" })[0]?.value).toBe(0);
    expect(find("icv_sse_streams", { kind: "hosted" })[0]?.value).toBe(0);
    expect(find("process_resident_memory_bytes").length + find("nodejs_heap_size_used_bytes").length).toBeGreaterThan(0);
    if (process.env.DATABASE_URL) expect(find("icv_db_pool_connections", { service: "proof", state: "total" })[0]?.value).toBeGreaterThan(0);

    // no label holds an id, a key or an identifier
    const secrets = [verificationId, ...tenantIds, t.testKey, t.liveKey, "37069199199", "prf_x"];
    for (const s of all) {
      for (const v of Object.values(s.labels)) {
        expect(v, `${s.name} ${JSON.stringify(s.labels)}`).not.toMatch(/[0-9A-HJKMNP-TV-Z]{26}|\d{6,}/);
        for (const secret of secrets) expect(v).not.toContain(secret);
      }
    }
  });

  it("counts open event streams while they are open", async () => {
    const scrape = async () =>
      samples(await (await fetch(`${stack.gateway.adminUrl}/metrics`)).text()).find((s) => s.name === "icv_sse_streams" && s.labels.kind === "api")?.value;
    const ac = new AbortController();
    const res = await fetch(`${stack.url}/api/v1/verifications/${verificationId}/events`, {
      headers: { authorization: `Bearer ${t.testKey}` },
      signal: ac.signal,
    });
    expect(res.status).toBe(200);
    expect(await scrape()).toBe(1);
    ac.abort();
    await expect.poll(scrape).toBe(0);
  });

  it("is not on the public port", async () => {
    expect((await fetch(`${stack.url}/metrics`)).status).toBe(404);
  });
});

describe("traces", () => {
  it("follow test-verify from the gateway through verification and proof into SQL, as one trace", async () => {
    const spans = exporter.getFinishedSpans();
    const root = spans.find((s) => s.name === "POST /api/v1/verifications/:id/test-verify");
    expect(root, spans.map((s) => s.name).join(", ")).toBeDefined();
    const traceId = root!.spanContext().traceId;
    const inTrace = spans.filter((s) => s.spanContext().traceId === traceId);
    const byId = new Map(inTrace.map((s) => [s.spanContext().spanId, s]));
    const parentOf = (s: ReadableSpan) => byId.get(s.parentSpanContext?.spanId ?? "");
    const ancestors = (s: ReadableSpan) => {
      const out: string[] = [];
      for (let p = parentOf(s); p; p = parentOf(p)) out.push(p.name);
      return out;
    };

    const verification = inTrace.find((s) => s.name.startsWith("verification VerificationService/"));
    const proof = inTrace.find((s) => s.name === "proof ProofService/IssueProof");
    expect(verification, inTrace.map((s) => s.name).join(", ")).toBeDefined();
    expect(proof).toBeDefined();
    // each hop: the caller's client span is the server span's parent
    expect(parentOf(verification!)?.name).toBe(`call ${verification!.name.split(" ")[1]}`);
    expect(ancestors(verification!)).toContain(root!.name);
    expect(parentOf(proof!)?.name).toBe("call ProofService/IssueProof");
    expect(ancestors(proof!)).toContain(verification!.name);
    // SQL under the service spans, named without text or values
    const sql = inTrace.filter((s) => s.attributes["db.system.name"] === "postgresql");
    expect(sql.some((s) => ancestors(s)[0] === proof!.name || ancestors(s).includes(proof!.name))).toBe(true);
    expect(sql.some((s) => ancestors(s).includes(verification!.name) && !ancestors(s).includes(proof!.name))).toBe(true);
    for (const s of sql) expect(s.name).toMatch(/^[A-Z]+ icv_[0-9a-f]{20}$/);
    // no span attribute holds the identifier, a key or the tenant
    for (const s of inTrace) {
      const text = JSON.stringify(s.attributes);
      for (const secret of [t.testKey, t.tenantId, "37069199199"]) expect(text).not.toContain(secret);
    }
  });
});
