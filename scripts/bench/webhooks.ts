// Webhook deliveries per second: the event pipeline of the webhook service (verification outbox →
// relay → webhook consumer → deliverer) run in this process, against a receiver on its own thread.
// The events are written straight into the verification outbox, so the measure is the pipeline's,
// not the REST path's. With failures, the receiver fails every delivery's first attempt (half of
// all requests), and the run counts how many end delivered.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Worker } from "node:worker_threads";
import { setTimeout as sleep } from "node:timers/promises";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { WebhookService } from "@icv/contracts/gen/icv/webhook/v1/webhook_service_pb.ts";
import {
  appendEvents,
  createLogger,
  newId,
  openServiceDatabase,
  parseConfig,
  rpcClient,
  serviceIdentity,
  startOutboxRelay,
  type OutboxEvent,
} from "@icv/platform";
import { startWebhookService } from "../../services/webhook/src/start.ts";
import { freshPostgres, REPO_ROOT } from "./stack.ts";

export interface WebhookResult {
  count: number;
  /** deliveries per second, from the first event written to the last delivery recorded */
  rate: number;
  seconds: number;
  delivered: number;
  failed: number;
  pending: number;
  /** requests the receiver answered, and how many of them with 500 */
  requests: number;
  refused: number;
}

// a bare receiver: 200, or 500 on the first attempt of each webhook-id when failing
const RECEIVER = `
const http = require("node:http");
const { parentPort, workerData } = require("node:worker_threads");
const seen = new Set();
let requests = 0, refused = 0;
const server = http.createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    requests++;
    const id = req.headers["webhook-id"];
    if (workerData.failFirst && !seen.has(id)) { seen.add(id); refused++; res.writeHead(500).end("no"); return; }
    res.writeHead(200).end("ok");
  });
});
server.keepAliveTimeout = 65000;
server.listen(0, "127.0.0.1", () => parentPort.postMessage({ port: server.address().port }));
parentPort.on("message", () => parentPort.postMessage({ requests, refused }));
`;

export async function benchWebhooks(count: number, failFirst: boolean, pgUrl?: string): Promise<WebhookResult> {
  const worker = new Worker(RECEIVER, { eval: true, workerData: { failFirst } });
  const ask = () => new Promise<any>((resolve) => worker.once("message", resolve));
  const { port } = await ask();
  const db = pgUrl ? await freshPostgres(pgUrl) : undefined;
  const dataDir = mkdtempSync(path.join(tmpdir(), "icv-bench-webhooks-"));
  const logger = createLogger({ level: "warn" });
  const config = parseConfig({
    DATA_DIR: dataDir,
    DATABASE_URL: db?.url,
    WEBHOOK_GRPC_PORT: "0",
    ALLOW_PRIVATE_TARGETS: "true",
    WEBHOOK_RETRY_DELAYS_MS: "100,100,100,100,100",
    LOG_LEVEL: "warn",
  });
  const source = await openServiceDatabase(config, "verification", path.join(REPO_ROOT, "services/verification/migrations"), logger, { outbox: true });
  const relay = await startOutboxRelay({ config, db: source, schema: "verification", logger });
  const webhook = await startWebhookService(config, logger);
  try {
    const client = rpcClient(WebhookService, webhook.url, await serviceIdentity(config, "gateway", logger));
    const tenantId = newId("tenant");
    await client.ensureTenantSecrets({ tenantId });
    await client.setEndpoint({ tenantId, environment: Environment.TEST, url: `http://127.0.0.1:${port}/hook` });
    const scope = { tenantId, environment: Environment.TEST };

    const began = performance.now();
    for (let i = 0; i < count; i += 500) {
      const events: OutboxEvent[] = [];
      for (let j = i; j < Math.min(count, i + 500); j++) {
        const id = newId("verification");
        events.push({
          aggregateType: "verification",
          aggregateId: id,
          eventType: "verification.completed",
          tenantId,
          environment: "test",
          payload: {
            verification_id: id,
            type: "phone",
            channel: "telegram",
            status: "verified",
            verified_at: new Date().toISOString(),
            external_user_id: `user-${j}`,
            client_metadata: {},
            proof: { token: "x".repeat(700), expires_at: new Date().toISOString() },
          },
        });
      }
      await appendEvents(source, "verification", events);
    }
    let stats = await client.getDeliveryStats({ scope });
    const deadline = performance.now() + 120_000;
    while (stats.delivered + stats.failed < count && performance.now() < deadline) {
      await sleep(20);
      stats = await client.getDeliveryStats({ scope });
    }
    const seconds = (performance.now() - began) / 1000;
    worker.postMessage("stats");
    const r = await ask();
    return {
      count,
      rate: stats.delivered / seconds,
      seconds,
      delivered: stats.delivered,
      failed: stats.failed,
      pending: stats.pending,
      requests: r.requests,
      refused: r.refused,
    };
  } finally {
    await webhook.close();
    await relay.stop();
    await source.close();
    await worker.terminate();
    await db?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
