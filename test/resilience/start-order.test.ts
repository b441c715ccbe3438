// Services started in any order, and before Postgres is reachable, all become ready without a
// restart: nothing exits because a dependency is late, /health says unhealthy meanwhile and
// healthy once everything is there, and a verification then goes through every service.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger, parseConfig, type RunningService } from "@icv/platform";
import { startProofService } from "../../services/proof/src/start.ts";
import { startVerificationService } from "../../services/verification/src/start.ts";
import { CHANNEL_CONFIG } from "../../services/verification/src/channels/registry.ts";
import { startSessionService } from "../../services/session/src/start.ts";
import { startDomainService } from "../../services/domain/src/start.ts";
import { startWebhookService } from "../../services/webhook/src/start.ts";
import { startLogService } from "../../services/log/src/start.ts";
import { startGateway, type RunningGateway } from "../../services/gateway/src/start.ts";
import { freePort, havePostgresBinaries, privatePostgres, type PrivatePostgres } from "../support/private-servers.ts";
import { api } from "../support/stack.ts";

const NAMES = ["proof", "domain", "webhook", "log", "verification", "session"] as const;
type Name = (typeof NAMES)[number] | "gateway";
const STARTERS = {
  proof: startProofService,
  domain: startDomainService,
  webhook: startWebhookService,
  log: startLogService,
  verification: startVerificationService,
  session: startSessionService,
  gateway: startGateway,
} as const;

let server: PrivatePostgres | undefined;
const dirs: string[] = [];
const running: RunningService[] = [];

beforeAll(async () => {
  if (havePostgresBinaries) server = await privatePostgres();
});
afterAll(async () => {
  for (const s of running.reverse()) await s.close();
  server?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** One deployment's configuration: fixed ports, so each service knows its peers before they run. */
async function deployment(databaseUrl: string) {
  const dataDir = mkdtempSync(path.join(tmpdir(), "icv-order-"));
  dirs.push(dataDir);
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    DATABASE_URL: databaseUrl,
    PORT: String(await freePort()),
    ADMIN_PORT: "0",
    HOST: "127.0.0.1",
    GRPC_HOST: "127.0.0.1",
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
    BOOTSTRAP_DEV_TENANT: "false",
    SHUTDOWN_TIMEOUT_MS: "1000",
    EVENT_POLL_INTERVAL_MS: "100",
    RETRY_BACKOFF_MAX_MS: "200",
  };
  for (const n of NAMES) env[`${n.toUpperCase()}_GRPC_PORT`] = String(await freePort());
  const config = parseConfig(env, CHANNEL_CONFIG);
  const logger = createLogger({ level: env.LOG_LEVEL });
  const start = async (name: Name) => {
    const s = await (STARTERS[name] as (c: typeof config, l: typeof logger) => Promise<RunningService>)(config, logger);
    running.push(s);
    return s;
  };
  return { start, url: `http://127.0.0.1:${env.PORT}` };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function works(url: string, gateway: RunningGateway) {
  const end = Date.now() + 10_000;
  let h = await api(url).get("/health");
  while (h.body?.status !== "healthy" && Date.now() < end) {
    await sleep(100);
    h = await api(url).get("/health");
  }
  expect(h.status).toBe(200);
  expect(h.body.status).toBe("healthy");
  const admin = await fetch(`${gateway.adminUrl}/icv.gateway.v1.AdminService/CreateTenant`, {
    method: "POST",
    headers: { authorization: `Bearer ${gateway.adminToken}`, "content-type": "application/json" },
    body: JSON.stringify({ name: "Order" }),
  }).then((r) => r.json());
  const c = api(url, admin.testKey);
  const v = await c.post("/api/v1/verifications", { type: "phone", channel: "sms", identifier: "+37069100090" });
  expect(v.status).toBe(201);
  const done = await c.post(`/api/v1/verifications/${v.body.id}/test-verify`);
  expect(done.status).toBe(200);
  expect(done.body.status).toBe("verified");
}

describe.skipIf(!havePostgresBinaries)("start order (skipped: no postgres binaries)", () => {
  it("every service started before Postgres is reachable waits for it and becomes ready", async () => {
    server!.stop();
    const d = await deployment(server!.url);
    // all at once, the gateway first: each waits with backoff instead of exiting
    const started = Promise.all((["gateway", "session", "verification", "webhook", "log", "domain", "proof"] as const).map((n) => d.start(n)));
    await sleep(1_000);
    server!.start();
    const [gateway] = (await started) as [RunningGateway, ...RunningService[]];
    await works(d.url, gateway);
  });

  it("services started callers first (gateway, then session, verification, …) all become ready", async () => {
    const admin = new pg.Client({ connectionString: server!.url });
    await admin.connect();
    await admin.query("CREATE DATABASE icv_order");
    await admin.end();
    const d = await deployment(server!.url.replace(/\/postgres$/, "/icv_order"));
    const gateway = (await d.start("gateway")) as RunningGateway;
    const early = await api(d.url).get("/health");
    expect(early.status).toBe(503);
    expect(early.body.services).toMatchObject({ database: "up", verification: "down", proof: "down" });
    for (const n of ["session", "verification", "webhook", "log", "domain", "proof"] as const) {
      await d.start(n);
      await sleep(100);
    }
    await works(d.url, gateway);
  });
});
