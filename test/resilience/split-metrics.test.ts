// The split deployment as the chart runs it: each service its own process (services/<name>/src/
// main.ts) on one Postgres, each answering GET /metrics on its own METRICS_PORT with its own
// series (the all-in-one's admin listener is test/e2e/observability.test.ts). A verification
// made and test-verified through the gateway shows up where each part of it ran: the HTTP route
// at the gateway, the RPCs, the send and the outbox at verification, the issued proof at proof.
// Their first start, all at once on an empty database, logs no "relation … does not exist".
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, havePostgresBinaries, privatePostgres, type PrivatePostgres } from "../support/private-servers.ts";
import { startReceiver, type Receiver } from "../support/receiver.ts";
import { api } from "../support/stack.ts";

const ROOT = path.resolve(import.meta.dirname, "..", "..");
const NAMES = ["proof", "domain", "webhook", "log", "verification", "session", "gateway"] as const;
type Name = (typeof NAMES)[number];
const ADMIN_TOKEN = "split-metrics-admin-token-0123456789";

let server: PrivatePostgres | undefined;
const dir = mkdtempSync(path.join(tmpdir(), "icv-split-metrics-"));
const children: ChildProcess[] = [];
const metricsPorts = {} as Record<Name, number>;
let url = "";
let adminUrl = "";
let output = "";
let rx: Receiver | undefined;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(what: () => Promise<boolean>, ms: number, why: () => string) {
  const end = Date.now() + ms;
  while (!(await what().catch(() => false))) {
    if (Date.now() > end) throw new Error(`timed out: ${why()}`);
    await sleep(200);
  }
}

beforeAll(async () => {
  if (!havePostgresBinaries) return;
  server = await privatePostgres();
  const { DATABASE_URL: _d, REDIS_URL: _r, ...inherited } = process.env;
  const port = await freePort();
  const adminPort = await freePort();
  const env: Record<string, string> = {
    ...inherited,
    DATABASE_URL: server.url,
    DATA_DIR: dir,
    PORT: String(port),
    ADMIN_PORT: String(adminPort),
    ADMIN_TOKEN,
    BOOTSTRAP_DEV_TENANT: "false",
    ALLOW_PRIVATE_TARGETS: "true",
    RETRY_BACKOFF_MAX_MS: "300",
    LOG_LEVEL: process.env.SPLIT_LOG_LEVEL ?? "warn",
  };
  for (const n of NAMES) if (n !== "gateway") env[`${n.toUpperCase()}_GRPC_PORT`] = String(await freePort());
  for (const n of NAMES) {
    metricsPorts[n] = await freePort();
    const child = spawn(process.execPath, ["--import", "tsx", `services/${n}/src/main.ts`], {
      cwd: ROOT,
      env: { ...env, METRICS_PORT: String(metricsPorts[n]) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout!.on("data", (b: Buffer) => (output += `${n}: ${b}`));
    child.stderr!.on("data", (b: Buffer) => (output += `${n}: ${b}`));
    children.push(child);
  }
  url = `http://127.0.0.1:${port}`;
  adminUrl = `http://127.0.0.1:${adminPort}`;
  let health = "";
  await until(
    async () => {
      const h = await api(url).get("/health");
      health = h.text;
      return h.body?.status === "healthy";
    },
    120_000,
    () => `a healthy split deployment (last /health: ${health}):\n${output}`,
  );
}, 180_000);

afterAll(async () => {
  await Promise.all(
    children.map((c) => (c.exitCode === null && c.signalCode === null ? new Promise((r) => (c.once("exit", r), c.kill("SIGTERM"))) : undefined)),
  );
  await rx?.close();
  server?.close();
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** GET /metrics of one service's process, parsed (the content type checked on the way). */
async function scrape(n: Name): Promise<Sample[]> {
  const res = await fetch(`http://127.0.0.1:${metricsPorts[n]}/metrics`);
  expect(res.status, n).toBe(200);
  expect(res.headers.get("content-type"), n).toMatch(/^text\/plain; version=0\.0\.4/);
  const out: Sample[] = [];
  for (const line of (await res.text()).split("\n")) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}
const find = (all: Sample[], name: string, labels: Record<string, string> = {}) =>
  all.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));

describe.skipIf(!havePostgresBinaries)("GET /metrics on each service of the split deployment (skipped: no postgres binaries)", () => {
  it("every process answers Prometheus text with its own series, and only on its metrics port", async () => {
    const admin = (method: string, body: object) =>
      fetch(`${adminUrl}/icv.gateway.v1.AdminService/${method}`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      }).then((r) => r.json() as Promise<{ tenant: { id: string }; testKey: string }>);
    const tenant = await admin("CreateTenant", { name: "Split metrics" });
    // a receiver that fails: the completion's delivery waits for its retry (the default schedule: minutes)
    rx = await startReceiver(500);
    await admin("SetWebhookEndpoint", { tenantId: tenant.tenant.id, environment: "ENVIRONMENT_TEST", url: rx.url });
    const c = api(url, tenant.testKey);
    const v = await c.post("/api/v1/verifications", { type: "phone", channel: "sms", identifier: "+37069100091", delivery: "outbound" });
    expect(v.status).toBe(201);
    const done = await c.post(`/api/v1/verifications/${v.body.id}/test-verify`);
    expect(done.status).toBe(200);
    expect(done.body.status).toBe("verified");

    await rx.waitFor(1, 30_000);
    await until(
      async () => find(await scrape("webhook"), "icv_webhook_attempts_total", { outcome: "retried" })[0]?.value === 1,
      30_000,
      () => "the failed attempt counted",
    );

    const m = {} as Record<Name, Sample[]>;
    for (const n of NAMES) m[n] = await scrape(n);

    for (const n of NAMES) {
      // process metrics in every process; the RPC RED series of every service behind the gateway
      expect(find(m[n], "process_resident_memory_bytes")[0]?.value, n).toBeGreaterThan(0);
      if (n !== "gateway") expect(find(m[n], "icv_rpc_server_requests_total", { service: n, code: "ok" }).length, n).toBeGreaterThan(0);
      // the service's own database pool (domain has no database), and nobody else's
      if (n !== "domain") expect(find(m[n], "icv_db_pool_connections", { service: n, state: "total" })[0]?.value, n).toBeGreaterThan(0);
      for (const other of NAMES.filter((o) => o !== n)) expect(find(m[n], "icv_db_pool_connections", { service: other }), `${other} in ${n}`).toHaveLength(0);
    }
    // the gateway: HTTP RED by route pattern, its SSE streams and its outbox
    expect(
      find(m.gateway, "icv_http_requests_total", {
        service: "gateway",
        method: "POST",
        route: "/api/v1/verifications/:id/test-verify",
        code: "200",
      })[0]?.value,
    ).toBe(1);
    expect(find(m.gateway, "icv_http_requests_total", { method: "POST", route: "/api/v1/verifications", code: "201" })[0]?.value).toBe(1);
    expect(find(m.gateway, "icv_sse_streams", { kind: "api" })).toHaveLength(1);
    // verification: the RPCs it served, the SMS it would have sent, its outbox lag
    expect(find(m.verification, "icv_rpc_server_requests_total", { service: "verification", code: "ok" }).length).toBeGreaterThan(0);
    expect(find(m.verification, "icv_rpc_server_duration_seconds_count", { service: "verification" }).length).toBeGreaterThan(0);
    expect(find(m.verification, "icv_sends_total", { channel: "sms", environment: "test" })[0]?.value).toBe(1);
    expect(find(m.verification, "icv_outbox_lag_seconds", { schema: "verification" })).toHaveLength(1);
    // proof: the proof it issued, and the RPC that asked for it
    expect(find(m.proof, "icv_rpc_server_requests_total", { service: "proof", method: "ProofService/IssueProof", code: "ok" })[0]?.value).toBe(1);
    expect(find(m.proof, "icv_proofs_issued_total", { method: "test" })[0]?.value).toBe(1);
    expect(find(m.proof, "icv_outbox_lag_seconds", { schema: "proof" })).toHaveLength(1);
    // webhook: the delivery waiting for its retry, the attempt's outcome, its outbox
    expect(find(m.webhook, "icv_webhook_queue_depth")[0]?.value).toBe(1);
    expect(find(m.webhook, "icv_webhook_attempts_total", { outcome: "retried" })[0]?.value).toBe(1);
    expect(find(m.webhook, "icv_outbox_lag_seconds", { schema: "webhook" })).toHaveLength(1);
    // each series where its work ran, not elsewhere
    for (const n of NAMES.filter((o) => o !== "proof")) expect(find(m[n], "icv_proofs_issued_total"), n).toHaveLength(0);
    for (const n of NAMES.filter((o) => o !== "gateway")) expect(find(m[n], "icv_http_requests_total"), n).toHaveLength(0);
    for (const n of NAMES.filter((o) => o !== "webhook")) expect(find(m[n], "icv_webhook_queue_depth")[0]?.value ?? 0, n).toBe(0);

    // never on the public port
    expect((await fetch(`${url}/metrics`)).status).toBe(404);
    for (const c of children) expect(c.exitCode).toBeNull();
    // a first start of six processes at once on an empty database: no one read a schema before it existed
    expect(output).not.toMatch(/relation "[^"]+" does not exist/);
  }, 60_000);
});
