/** The WebhookService handlers: tenant secrets and endpoints, and the deliveries a tenant reads and retries. */
import type { ConnectRouter } from "@connectrpc/connect";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { WebhookService } from "@icv/contracts/gen/icv/webhook/v1/webhook_service_pb.ts";
import { AppError, isId, pageInfo, pageRequest, requireScope, type Clock, type EnvName, type Scope } from "@icv/platform";
import { validateEndpointUrl, type TargetRules } from "../endpoint-url.ts";
import { newWebhookSecret } from "../signing.ts";
import type { DeliveryStore } from "../store/deliveries.ts";
import type { SettingsStore } from "../store/settings.ts";
import { environmentWebhooks, toMessage } from "./convert.ts";

/** How long a rotated-out secret keeps signing beside the new one. */
export const ROTATION_OVERLAP_MS = 24 * 3600_000;

const tenantId = (id: string): string => {
  if (!isId("tenant", id)) throw new AppError("validation_error", "tenant_id must be a tenant id");
  return id;
};

const envName = (e: Environment): EnvName => {
  if (e === Environment.UNSPECIFIED) throw new AppError("validation_error", "environment must be live or test");
  return e === Environment.LIVE ? "live" : "test";
};

/** The stores the handlers use. */
export interface WebhookStores {
  settings: SettingsStore;
  deliveries: DeliveryStore;
}

export function webhookRoutes(
  store: WebhookStores,
  clock: Clock,
  onRequeued: () => void,
  targets: TargetRules = { allowPrivate: false },
  sendTest?: (scope: Scope) => Promise<string>,
) {
  const settings = async (tenant: string, env: EnvName) => {
    const [secrets, endpoints] = await Promise.all([store.settings.secrets(tenant), store.settings.endpoints(tenant)]);
    return environmentWebhooks(
      env,
      secrets.find((s) => s.environment === env),
      endpoints.find((e) => e.environment === env),
      clock.now(),
    );
  };
  return (router: ConnectRouter) =>
    router.service(WebhookService, {
      async ensureTenantSecrets(req) {
        const s = await store.settings.ensureSecrets(tenantId(req.tenantId), { live: newWebhookSecret(), test: newWebhookSecret() }, clock.now());
        return { liveSecret: s.live, testSecret: s.test };
      },
      async setEndpoint(req) {
        const tenant = tenantId(req.tenantId);
        const env = envName(req.environment);
        await store.settings.setEndpoint(tenant, env, await validateEndpointUrl(req.url, targets), clock.now());
        return { webhooks: await settings(tenant, env) };
      },
      async removeEndpoint(req) {
        const removed = await store.settings.removeEndpoint(tenantId(req.tenantId), envName(req.environment));
        if (!removed) throw new AppError("not_found", "no webhook endpoint is set for this tenant and environment");
        return { removedUrl: removed };
      },
      async enableEndpoint(req) {
        const tenant = tenantId(req.tenantId);
        const env = envName(req.environment);
        if (!(await store.settings.enableEndpoint(tenant, env))) throw new AppError("not_found", "no webhook endpoint is set for this tenant and environment");
        return { webhooks: await settings(tenant, env) };
      },
      async getTenantWebhooks(req) {
        const tenant = tenantId(req.tenantId);
        return { live: await settings(tenant, "live"), test: await settings(tenant, "test") };
      },
      async rotateSecret(req) {
        const tenant = tenantId(req.tenantId);
        const env = envName(req.environment);
        const now = clock.now();
        const rotated = await store.settings.rotateSecret(tenant, env, newWebhookSecret(), now, new Date(now.getTime() + ROTATION_OVERLAP_MS));
        if (!rotated) throw new AppError("not_found", "this tenant has no webhook secrets");
        return { webhooks: await settings(tenant, env) };
      },
      async listDeliveries(req) {
        const scope = requireScope(req.scope);
        const { page, limit, offset } = pageRequest(req.page);
        const { rows, total } = await store.deliveries.list(scope, {
          status: req.status,
          eventType: req.eventType,
          verificationRequestId: req.verificationRequestId,
          verificationIds: req.verificationIds.slice(0, 1000),
          limit,
          offset,
        });
        return { deliveries: rows.map((r) => toMessage(r, false)), pageInfo: pageInfo(page, limit, total) };
      },
      async getDelivery(req) {
        const scope = requireScope(req.scope);
        const row = isId("webhookDelivery", req.id) ? await store.deliveries.get(scope, req.id) : undefined;
        if (!row) throw new AppError("not_found", "webhook delivery not found");
        return { delivery: toMessage(row, true) };
      },
      async getDeliveryStats(req) {
        return store.deliveries.stats(requireScope(req.scope), new Date(clock.now().getTime() - 24 * 3600_000));
      },
      async retryDelivery(req) {
        const scope = requireScope(req.scope);
        if (!isId("webhookDelivery", req.id)) throw new AppError("not_found", "webhook delivery not found");
        const row = await store.deliveries.requeueFailed(scope, req.id, clock.now());
        if (!row) {
          const current = await store.deliveries.get(scope, req.id);
          if (!current) throw new AppError("not_found", "webhook delivery not found");
          throw new AppError("invalid_state", `only a failed delivery can be retried; this one is ${current.status}`);
        }
        onRequeued();
        return { delivery: toMessage(row, true) };
      },
      async sendTestEvent(req) {
        if (!sendTest) throw new AppError("invalid_state", "test events are not available here");
        const deliveryId = await sendTest(requireScope(req.scope));
        onRequeued();
        return { deliveryId };
      },
    });
}
