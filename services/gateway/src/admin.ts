import { timingSafeEqual } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { AdminService } from "@icv/contracts/gen/icv/gateway/v1/admin_service_pb.ts";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { AppError, answerMetrics, toConnectError, ts, type Logger } from "@icv/platform";
import type { Clients } from "./clients.ts";
import type { Tenants } from "./tenants.ts";

/** Only callers presenting the admin token (constant-time compare) reach the admin RPCs. */
function adminToken(token: string): Interceptor {
  const want = Buffer.from(token);
  return (next) => async (req) => {
    const got = Buffer.from((req.header.get("authorization") ?? "").replace(/^Bearer\s+/i, ""));
    if (got.length !== want.length || !timingSafeEqual(got, want)) throw new ConnectError("admin token required", Code.Unauthenticated);
    try {
      return await next(req);
    } catch (e) {
      throw toConnectError(e);
    }
  };
}

/**
 * The operator API behind `npm run admin`: a Connect server (HTTP/1.1 JSON or gRPC-Web) on the
 * admin port, bound to loopback by default.
 */
export async function startAdminServer(opts: {
  host: string;
  port: number;
  token: string;
  tenants: Tenants;
  clients: Clients;
  /** A console invite (console/passkeys.ts). */
  invite: (i: { tenantId: string; email: string; role: string }) => Promise<{ inviteUrl: string; user: { id: string }; expiresAt: Date }>;
  onKeyRevoked: () => void;
  logger: Logger;
}) {
  /** Webhook verbs act on tenants the gateway knows; their secrets are made if missing (e.g. the bootstrap tenant). */
  const knownTenant = async (tenantId: string) => {
    if (!(await opts.tenants.list()).some((t) => t.id === tenantId)) throw new AppError("not_found", "tenant not found");
    await opts.clients.webhook.ensureTenantSecrets({ tenantId });
  };
  const handler = connectNodeAdapter({
    interceptors: [adminToken(opts.token)],
    routes: (router) =>
      router.service(AdminService, {
        async createTenant(req) {
          const r = await opts.tenants.create(req.name);
          const secrets = await opts.clients.webhook.ensureTenantSecrets({ tenantId: r.tenant.id });
          opts.logger.info({ tenant_id: r.tenant.id }, "tenant created");
          return {
            tenant: { id: r.tenant.id, name: r.tenant.name, createdAt: ts(r.tenant.createdAt) },
            liveKey: r.liveKey,
            testKey: r.testKey,
            liveWebhookSecret: secrets.liveSecret,
            testWebhookSecret: secrets.testSecret,
            liveKeyId: r.liveKeyId,
            testKeyId: r.testKeyId,
          };
        },
        async listTenants() {
          const rows = await opts.tenants.list();
          return { tenants: rows.map((t) => ({ id: t.id, name: t.name, createdAt: ts(t.created_at) })) };
        },
        async createApiKey(req) {
          if (req.environment === Environment.UNSPECIFIED) throw new AppError("validation_error", "environment must be live or test");
          const r = await opts.tenants.createKey(req.tenantId, req.environment === Environment.LIVE ? "live" : "test");
          opts.logger.info({ tenant_id: req.tenantId, key_id: r.keyId }, "api key created");
          return r;
        },
        async revokeApiKey(req) {
          const r = await opts.tenants.revokeKey({ keyId: req.keyId, key: req.key });
          opts.onKeyRevoked();
          opts.logger.info({ key_id: r.keyId }, "api key revoked");
          return { keyId: r.keyId, revokedAt: ts(r.revokedAt) };
        },
        async listApiKeys(req) {
          const keys = await opts.tenants.listKeys(req.tenantId);
          return {
            keys: keys.map((k) => ({
              keyId: k.id,
              environment: k.environment === "live" ? Environment.LIVE : Environment.TEST,
              prefix: k.key_prefix,
              createdAt: ts(k.created_at),
              lastUsedAt: k.last_used_at ? ts(k.last_used_at) : undefined,
              revokedAt: k.revoked_at ? ts(k.revoked_at) : undefined,
            })),
          };
        },
        async rotateSigningKey(req) {
          const r = await opts.clients.proof.rotateSigningKey({ environment: req.environment });
          opts.logger.info({ kid: r.kid, retired_kid: r.retiredKid, environment: r.environment }, "proof signing key rotated");
          return { kid: r.kid, retiredKid: r.retiredKid, environment: r.environment };
        },
        async setWebhookEndpoint(req) {
          await knownTenant(req.tenantId);
          const r = await opts.clients.webhook.setEndpoint({ tenantId: req.tenantId, environment: req.environment, url: req.url });
          opts.logger.info({ tenant_id: req.tenantId, environment: r.webhooks?.environment }, "webhook endpoint set");
          return { webhooks: r.webhooks };
        },
        async removeWebhookEndpoint(req) {
          await knownTenant(req.tenantId);
          const r = await opts.clients.webhook.removeEndpoint({ tenantId: req.tenantId, environment: req.environment });
          opts.logger.info({ tenant_id: req.tenantId }, "webhook endpoint removed");
          return { removedUrl: r.removedUrl };
        },
        async setTenantRetention(req) {
          if (!(await opts.tenants.list()).some((t) => t.id === req.tenantId)) throw new AppError("not_found", "tenant not found");
          const scope = { tenantId: req.tenantId, environment: req.environment };
          const r = await opts.clients.verification.setRetention({ scope, retentionDays: req.retentionDays });
          opts.logger.info({ tenant_id: req.tenantId, environment: req.environment, retention_days: r.retentionDays }, "retention set");
          return { retentionDays: r.retentionDays };
        },
        async getTenantRetention(req) {
          if (!(await opts.tenants.list()).some((t) => t.id === req.tenantId)) throw new AppError("not_found", "tenant not found");
          const [live, test] = await Promise.all(
            [Environment.LIVE, Environment.TEST].map((environment) =>
              opts.clients.verification.getRetention({ scope: { tenantId: req.tenantId, environment } }),
            ),
          );
          return { liveRetentionDays: live.retentionDays, testRetentionDays: test.retentionDays };
        },
        async enableWebhookEndpoint(req) {
          await knownTenant(req.tenantId);
          const r = await opts.clients.webhook.enableEndpoint({ tenantId: req.tenantId, environment: req.environment });
          opts.logger.info({ tenant_id: req.tenantId, environment: r.webhooks?.environment }, "webhook endpoint enabled");
          return { webhooks: r.webhooks };
        },
        async getWebhookSettings(req) {
          await knownTenant(req.tenantId);
          const r = await opts.clients.webhook.getTenantWebhooks({ tenantId: req.tenantId });
          return { live: r.live, test: r.test };
        },
        async rotateWebhookSecret(req) {
          await knownTenant(req.tenantId);
          const r = await opts.clients.webhook.rotateSecret({ tenantId: req.tenantId, environment: req.environment });
          opts.logger.info({ tenant_id: req.tenantId, environment: r.webhooks?.environment }, "webhook secret rotated");
          return { webhooks: r.webhooks };
        },
        async inviteConsoleUser(req) {
          if (!(await opts.tenants.list()).some((t) => t.id === req.tenantId)) throw new AppError("not_found", "tenant not found");
          const r = await opts.invite({ tenantId: req.tenantId, email: req.email, role: req.role });
          opts.logger.info({ tenant_id: req.tenantId, user_id: r.user.id }, "console user invited");
          return { inviteUrl: r.inviteUrl, userId: r.user.id, expiresAt: ts(r.expiresAt) };
        },
      }),
  });
  // GET /metrics: the process's Prometheus metrics (every co-hosted service), no token (loopback by default)
  const server = http.createServer((req, res) => answerMetrics(req, res) || handler(req, res));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
