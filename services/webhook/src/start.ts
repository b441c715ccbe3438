import path from "node:path";
import { fileURLToPath } from "node:url";
import {
  createEventLog,
  createOutboundClient,
  hostService,
  openServiceDatabase,
  PersonalData,
  startSweeper,
  systemClock,
  trackWebhookQueue,
  type Clock,
  type Config,
  type Logger,
  type Resolver,
  type RunningService,
} from "@icv/platform";
import { deliveryConsumer } from "./consumer.ts";
import { Deliverer, outboundSend } from "./deliverer.ts";
import { WEBHOOK_EVENT_TYPES, WEBHOOK_TOPICS } from "./payload.ts";
import { DEFAULT_RETRY_DELAYS_MS } from "./schedule.ts";
import { webhookCallers } from "./callers.ts";
import { sendTestEvent } from "./test-event.ts";
import { webhookRoutes } from "./rpc/webhooks.ts";
import { DeliveryStore } from "./store/deliveries.ts";
import { checkWebhookKeys, sealOutdatedBodies, webhookDatabase } from "./store/sealing.ts";
import { SettingsStore } from "./store/settings.ts";

const MIGRATIONS = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "migrations");
/** Extra lease time beyond the request timeout: writing the result, a slow event loop. */
const LEASE_MARGIN_MS = 30_000;

export interface WebhookServiceOptions {
  /** How long a claimed delivery is held (default WEBHOOK_TIMEOUT_MS + 30 s); tests of crash recovery shorten it. */
  leaseMs?: number;
  /** DNS for the SSRF guard (tests). */
  resolver?: Resolver;
  /** Jitter source (tests). */
  random?: () => number;
}

/**
 * Starts the webhook service: tenants' secrets and endpoints, the event consumer that turns
 * webhook events into delivery rows, the deliverer that sends them, and the RPC server (with
 * the relay of its outbox).
 */
export async function startWebhookService(
  config: Config,
  logger: Logger,
  clock: Clock = systemClock,
  opts: WebhookServiceOptions = {},
): Promise<RunningService> {
  const log = logger.child({ service: "webhook" });
  // delivery bodies are sealed at rest and opened on read (store/sealing.ts); bodies this service cannot open refuse the start
  const pd = PersonalData.fromConfig(config, log);
  const db = webhookDatabase(await openServiceDatabase(config, "webhook", MIGRATIONS, log, { outbox: true }), pd);
  await checkWebhookKeys(db, pd).catch(async (e) => {
    await db.close();
    throw e;
  });
  // bodies stored before sealing, or under an older key version, are sealed in batches meanwhile (until a pass finds none)
  let sealed = false;
  const sealer = startSweeper(
    "delivery-body-sealing",
    async () => {
      if (sealed) return 0;
      const n = await sealOutdatedBodies(db);
      sealed = n === 0;
      return n;
    },
    config.SWEEP_INTERVAL_MS,
    log,
  );
  const deliveries = new DeliveryStore(db, { disableAfterMs: config.WEBHOOK_DISABLE_AFTER_MS });
  const settings = new SettingsStore(db);
  const delays = config.WEBHOOK_RETRY_DELAYS_MS ?? DEFAULT_RETRY_DELAYS_MS;
  if (config.ALLOW_PRIVATE_TARGETS) log.warn("ALLOW_PRIVATE_TARGETS=true: webhooks may be sent to loopback and private addresses (never in production)");

  const outbound = createOutboundClient({
    allowPrivate: config.ALLOW_PRIVATE_TARGETS,
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    maxBodyBytes: 4096,
    maxSockets: config.WEBHOOK_CONCURRENCY,
    resolver: opts.resolver,
  });
  const deliverer = new Deliverer({
    queue: deliveries,
    send: outboundSend(outbound),
    clock,
    logger: log,
    concurrency: config.WEBHOOK_CONCURRENCY,
    leaseMs: opts.leaseMs ?? config.WEBHOOK_TIMEOUT_MS + LEASE_MARGIN_MS,
    retryDelaysMs: delays,
    pollMs: config.EVENT_POLL_INTERVAL_MS,
    drainMs: config.SHUTDOWN_TIMEOUT_MS,
    random: opts.random,
  }).start();

  const events = await createEventLog(config, log);
  const consumer = await events.consume({
    group: "webhook-deliveries",
    topics: WEBHOOK_TOPICS,
    eventTypes: WEBHOOK_EVENT_TYPES,
    db,
    schema: "webhook",
    ...deliveryConsumer({ clock, retryDelaysMs: delays, onCommitted: () => deliverer.wake(), pd, db }),
  });

  const untrackQueue = trackWebhookQueue({}, () => deliveries.pendingCount());
  return hostService(config, "webhook", {
    rpcName: "icv.webhook.v1.WebhookService",
    logger: log,
    db,
    outbox: true,
    callers: webhookCallers,
    routes: webhookRoutes(
      { settings, deliveries },
      clock,
      () => deliverer.wake(),
      { allowPrivate: config.ALLOW_PRIVATE_TARGETS, resolver: opts.resolver },
      (scope) => sendTestEvent(db, clock, scope),
    ),
    async onClose() {
      untrackQueue();
      await sealer.stop();
      await consumer.close();
      await deliverer.stop();
      await events.close();
      outbound.close();
    },
  });
}
