import type http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import {
  connectRedis,
  createEventLog,
  dataDirSecret,
  fromConnectError,
  rateLimiterOn,
  retryWithBackoff,
  openServiceDatabase,
  PersonalData,
  serviceIdentity,
  startOutboxRelay,
  startSweeper,
  systemClock,
  trackSseStreams,
  workerSlot,
  type Clock,
  type Config,
  type Logger,
  type RunningService,
} from "@icv/platform";
import { startAdminServer } from "./admin.ts";
import { invite } from "./console/passkeys.ts";
import { buildApp } from "./app.ts";
import { followKeyRevocations } from "./auth.ts";
import { makeClients } from "./clients.ts";
import { IDEMPOTENCY_TTL_MS } from "./idempotency.ts";
import { gatewayServer } from "./server.ts";
import { FallbackConnectionLimiter, MemoryConnectionLimiter, RedisConnectionLimiter } from "./sse/connection-limiter.ts";
import { SseHub } from "./sse/hub.ts";
import { startingHandler } from "./starting.ts";
import { HostedHub } from "./hosted/hub.ts";
import { ConsoleStore } from "./console/store.ts";
import { GatewayStore } from "./store.ts";
import { Tenants } from "./tenants.ts";

const MIGRATIONS = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "migrations");

export interface RunningGateway extends RunningService {
  adminUrl: string;
  adminToken: string;
  /** Keys of the development tenant made on first start (undefined when it already existed). */
  devTenant?: { tenantId: string; liveKey: string; testKey: string; liveWebhookSecret: string; testWebhookSecret: string };
}

export async function startGateway(config: Config, logger: Logger, clock: Clock = systemClock): Promise<RunningGateway> {
  const log = logger.child({ service: "gateway" });
  // listening from the first moment: live, not ready (starting.ts) until the app takes over below.
  // A worker of `npm start` listens once its app serves instead: the primary hands connections
  // only to listening workers, so a worker (re)starting beside the others takes none of them.
  let handle = startingHandler();
  const server = gatewayServer(config, (req, res) => handle(req, res));
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(config.PORT, config.HOST, () => resolve());
    });
  const late = workerSlot() !== undefined;
  if (!late) await listen();
  try {
    return await startApp(config, log, clock, server, async (app) => {
      handle = app;
      if (late) await listen();
    });
  } catch (e) {
    if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    throw e;
  }
}

async function startApp(
  config: Config,
  log: Logger,
  clock: Clock,
  server: http.Server,
  serve: (app: http.RequestListener) => Promise<void>,
): Promise<RunningGateway> {
  const db = await openServiceDatabase(config, "gateway", MIGRATIONS, log, { outbox: true });
  // the stored answers of Idempotency-Key requests hold personal data: sealed (docs/privacy.md)
  const store = new GatewayStore(db, PersonalData.fromConfig(config, log));
  // never awaited: a Redis that is down (at start or later) means in-process limits meanwhile
  const redis = config.REDIS_URL
    ? connectRedis(config.REDIS_URL, log, {
        timeoutMs: config.REDIS_TIMEOUT_MS,
        maxBackoffMs: config.RETRY_BACKOFF_MAX_MS,
        service: "gateway",
      })
    : undefined;
  const limiter = rateLimiterOn(redis, log);
  const identity = await serviceIdentity(config, "gateway", log);
  const clients = makeClients(config, identity, log);
  const tenants = new Tenants(store, clock);
  const consoleStore = new ConsoleStore(db);
  // event streams: one broadcast subscription fans verification events out to this replica's streams;
  // connection leases outlive a few missed heartbeats, so a dead replica's slots free themselves
  const events = await createEventLog(config, log);
  const relay = await startOutboxRelay({ config, db, schema: "gateway", logger: log });
  const sse = new SseHub({
    limiter: redis
      ? new FallbackConnectionLimiter(redis, new RedisConnectionLimiter(redis.client, Math.max(3 * config.SSE_HEARTBEAT_MS, 10_000)))
      : new MemoryConnectionLimiter(),
    maxPerTenant: config.SSE_MAX_CONNECTIONS_PER_TENANT,
    heartbeatMs: config.SSE_HEARTBEAT_MS,
    logger: log,
  });
  await sse.listen(events);
  const hosted = new HostedHub({ heartbeatMs: config.SSE_HEARTBEAT_MS, logger: log });
  await hosted.listen(events);
  const untrackStreams = [trackSseStreams({ kind: "api" }, () => sse.size), trackSseStreams({ kind: "hosted" }, () => hosted.size)];
  const { listener, auth } = buildApp({
    config,
    logger: log,
    store,
    clients,
    limiter,
    // the connection's state, no round trip: /health never waits on Redis
    redisPing: redis ? async () => redis.up() : undefined,
    kafkaUp: events.up ? () => events.up!() : undefined,
    sse,
    hosted,
    console: { store: consoleStore, tenants, clock },
  });

  // a key revoked anywhere (admin API of any replica or worker) is forgotten here as its event arrives
  const keyRevocations = await followKeyRevocations(auth, events);

  await serve(listener);
  const port = (server.address() as AddressInfo).port;
  log.info({ port }, "gateway listening");

  const adminToken = config.ADMIN_TOKEN ?? dataDirSecret(config.DATA_DIR, "admin-token", "ADMIN_TOKEN", log);
  // loopback by default; anywhere else only with an ADMIN_TOKEN set (config checks it)
  const admin = await startAdminServer({
    host: config.ADMIN_HOST,
    port: config.ADMIN_PORT,
    token: adminToken,
    tenants,
    clients,
    invite: (i) => invite(consoleStore, config, clock, i),
    onKeyRevoked: () => auth.forget(),
    logger: log,
  });

  let devTenant: RunningGateway["devTenant"];
  if (config.BOOTSTRAP_DEV_TENANT && (await store.tenantCount()) === 0) {
    const t = await tenants.create("Development");
    // the webhook service may start after the gateway: wait for it rather than exit
    const secrets = await retryWithBackoff(() => clients.webhook.ensureTenantSecrets({ tenantId: t.tenant.id }), {
      maxMs: config.RETRY_BACKOFF_MAX_MS,
      retryable: (e) => fromConnectError(e).code === "service_unavailable",
      onRetry: (_e, attempt) => attempt === 0 && log.warn("webhook service not reachable yet; waiting to make the development tenant's secrets"),
    });
    devTenant = {
      tenantId: t.tenant.id,
      liveKey: t.liveKey,
      testKey: t.testKey,
      liveWebhookSecret: secrets.liveSecret,
      testWebhookSecret: secrets.testSecret,
    };
  }
  const purge = startSweeper("idempotency-purge", () => store.purgeIdempotencyKeys(new Date(clock.now().getTime() - IDEMPOTENCY_TTL_MS)), 60 * 60_000, log);

  return {
    url: `http://127.0.0.1:${port}`,
    adminUrl: `http://${["0.0.0.0", "::"].includes(config.ADMIN_HOST) ? "127.0.0.1" : config.ADMIN_HOST.includes(":") ? `[${config.ADMIN_HOST}]` : config.ADMIN_HOST}:${admin.port}`,
    adminToken,
    devTenant,
    async close() {
      // open streams would hold server.close() forever: end them first
      for (const untrack of untrackStreams) untrack();
      await keyRevocations.close();
      await sse.close();
      await hosted.close();
      server.closeIdleConnections();
      await Promise.all([new Promise<void>((resolve) => server.close(() => resolve())), admin.close()]);
      await purge.stop();
      await relay.stop();
      await events.close();
      await redis?.close();
      await db.close();
      identity.close();
    },
  };
}
