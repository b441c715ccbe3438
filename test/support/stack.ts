// Starts the whole service the way `npm start` does (every service in this process, the gateway
// in front), on free loopback ports and a fresh database: PGlite in a temp dir by default, or a
// new database on the Postgres of DATABASE_URL, and Redis when REDIS_URL is set. Both are copies of
// the run's first start (test/support/stack-template.ts) unless the overrides change what a first
// start makes.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { AdminService } from "@icv/contracts/gen/icv/gateway/v1/admin_service_pb.ts";
import { createLogger, parseConfig, systemClock, type Clock, type Config, type RunningService } from "@icv/platform";
import { startProofService } from "../../services/proof/src/start.ts";
import { startVerificationService } from "../../services/verification/src/start.ts";
import { CHANNEL_CONFIG } from "../../services/verification/src/channels/registry.ts";
import { startSessionService } from "../../services/session/src/start.ts";
import { startDomainService } from "../../services/domain/src/start.ts";
import { startWebhookService } from "../../services/webhook/src/start.ts";
import { startLogService } from "../../services/log/src/start.ts";
import { startGateway, type RunningGateway } from "../../services/gateway/src/start.ts";
import { maybeFreshPostgres } from "./fresh-postgres.ts";
import { freePort } from "./private-servers.ts";
import { copyTemplate, stackTemplate, usesTemplate } from "./stack-template.ts";

type LogDestination = NonNullable<Parameters<typeof createLogger>[0]>["destination"];

export interface TenantKeys {
  tenantId: string;
  liveKey: string;
  testKey: string;
}

export interface Stack {
  url: string;
  env: Record<string, string>;
  dataDir: string;
  gateway: RunningGateway;
  services: Record<"proof" | "verification" | "session" | "domain" | "webhook" | "log", RunningService>;
  admin: ReturnType<typeof createClient<typeof AdminService>>;
  adminHeaders: { authorization: string };
  /** A new tenant with its keys. */
  tenant(name?: string): Promise<TenantKeys>;
  /**
   * Restart one service on the same database (simulates a crash and recovery of that process);
   * `whileDown` runs while it is stopped (what happened before the crash, or while it was away).
   */
  restart(name: "proof" | "verification" | "session" | "log", whileDown?: () => Promise<void>): Promise<void>;
  close(): Promise<void>;
}

/** The run's first start, kept as the template: a stack started in `dataDir` and closed; answers its database. */
async function firstStart(dataDir: string): Promise<string | undefined> {
  const db = await maybeFreshPostgres();
  try {
    await (await launch(dataDir, db?.url, {}, systemClock)).close();
  } catch (e) {
    await db?.drop();
    throw e;
  }
  return db?.name;
}

/** `logTo`: where the stack's log lines go (a test that asserts what is never logged reads them there). */
export async function startStack(overrides: Record<string, string> = {}, clock: Clock = systemClock, opts: { logTo?: LogDestination } = {}): Promise<Stack> {
  const template = usesTemplate(overrides) ? await stackTemplate(firstStart) : undefined;
  const dataDir = mkdtempSync(path.join(tmpdir(), "icv-test-"));
  if (template) copyTemplate(template, dataDir);
  const db = await maybeFreshPostgres(template?.database);
  const stack = await launch(dataDir, db?.url, overrides, clock, opts.logTo);
  return {
    ...stack,
    async close() {
      await stack.close();
      await db?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Files run side by side: each vitest worker's stacks take their own Redis database (1–15), so
 * counters keyed by what every stack shares (a client address, 127.0.0.1) never add up across files
 * running at once. A URL that names a database keeps it.
 */
function workerRedis(url: string): string {
  const worker = Number(process.env.VITEST_POOL_ID);
  const u = new URL(url);
  if (u.pathname.length > 1 || !(worker >= 1 && worker <= 15)) return url;
  u.pathname = `/${worker}`;
  return u.toString();
}

/** Starts every service and the gateway on `dataDir` (and the database at `dbUrl`); close() stops them. */
async function launch(dataDir: string, dbUrl: string | undefined, overrides: Record<string, string>, clock: Clock, logTo?: LogDestination): Promise<Stack> {
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    PORT: "0",
    ADMIN_PORT: "0",
    HOST: "127.0.0.1",
    GRPC_HOST: "127.0.0.1",
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
    BOOTSTRAP_DEV_TENANT: "false",
    SHUTDOWN_TIMEOUT_MS: "2000",
    ...(dbUrl ? { DATABASE_URL: dbUrl } : {}),
    ...(process.env.REDIS_URL ? { REDIS_URL: workerRedis(process.env.REDIS_URL) } : {}),
    // the services restart() starts again bind their old port then: one from freePort, which no
    // listen(0) or outgoing connection of a test beside can take while the service is down
    VERIFICATION_GRPC_PORT: String(await freePort()),
    PROOF_GRPC_PORT: String(await freePort()),
    SESSION_GRPC_PORT: String(await freePort()),
    DOMAIN_GRPC_PORT: "0",
    WEBHOOK_GRPC_PORT: "0",
    LOG_GRPC_PORT: String(await freePort()),
    ...overrides,
  };
  const logger = createLogger({ level: env.LOG_LEVEL, destination: logTo });
  const cfg = (): Config => parseConfig(env, CHANNEL_CONFIG);

  const services = {} as Stack["services"];
  [services.proof, services.domain, services.webhook, services.log] = await Promise.all([
    startProofService(cfg(), logger, clock),
    startDomainService(cfg(), logger),
    startWebhookService(cfg(), logger),
    startLogService(cfg(), logger, clock),
  ]);
  env.LOG_URL = services.log.url;
  env.PROOF_URL = services.proof.url;
  env.DOMAIN_URL = services.domain.url;
  env.WEBHOOK_URL = services.webhook.url;
  services.verification = await startVerificationService(cfg(), logger, clock);
  env.VERIFICATION_URL = services.verification.url;
  services.session = await startSessionService(cfg(), logger, clock);
  env.SESSION_URL = services.session.url;
  const gateway = await startGateway(cfg(), logger, clock);

  const admin = createClient(AdminService, createConnectTransport({ baseUrl: gateway.adminUrl, httpVersion: "1.1" }));
  const adminHeaders = { authorization: `Bearer ${gateway.adminToken}` };
  const port = (url: string) => new URL(url).port;

  return {
    url: gateway.url,
    env,
    dataDir,
    gateway,
    services,
    admin,
    adminHeaders,
    async tenant(name = "Test tenant") {
      const r = await admin.createTenant({ name }, { headers: adminHeaders });
      return { tenantId: r.tenant!.id, liveKey: r.liveKey, testKey: r.testKey };
    },
    async restart(name, whileDown) {
      await services[name].close();
      await whileDown?.();
      const pinned = parseConfig({ ...env, [`${name.toUpperCase()}_GRPC_PORT`]: port(services[name].url) }, CHANNEL_CONFIG);
      const start = { proof: startProofService, verification: startVerificationService, session: startSessionService, log: startLogService }[name];
      services[name] = await start(pinned, logger, clock);
    },
    async close() {
      await gateway.close();
      await services.session.close();
      await services.verification.close();
      await Promise.all([services.proof.close(), services.domain.close(), services.webhook.close(), services.log.close()]);
    },
  };
}

/** A small JSON client for the public API. */
export function api(base: string, key?: string) {
  const call = async (method: string, p: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(base + p, {
      method,
      headers: {
        ...(key ? { authorization: `Bearer ${key}` } : {}),
        ...(body !== undefined ? { "content-type": "application/json" } : {}),
        ...headers,
      },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let json: any;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, body: json, text };
  };
  return {
    get: (p: string, headers?: Record<string, string>) => call("GET", p, undefined, headers),
    post: (p: string, body?: unknown, headers?: Record<string, string>) => call("POST", p, body, headers),
    put: (p: string, body?: unknown) => call("PUT", p, body),
    patch: (p: string, body?: unknown, headers?: Record<string, string>) => call("PATCH", p, body, headers),
    del: (p: string) => call("DELETE", p),
  };
}
