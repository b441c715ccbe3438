import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { type DeliverySchema, type EnvironmentWebhooksSchema, WebhookService } from "@icv/contracts/gen/icv/webhook/v1/webhook_service_pb.ts";
import {
  AppError,
  checkTargetUrl,
  isId,
  OutboundError,
  pageInfo,
  pageRequest,
  requireScope,
  toEnvironment,
  ts,
  type Clock,
  type EnvName,
  type Resolver,
  type Scope,
} from "@icv/platform";
import { newWebhookSecret } from "./signing.ts";
import type { DeliveryRow, EndpointRow, SecretRow, WebhookStore } from "./store.ts";

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

/** Where endpoints may point: private addresses only with ALLOW_PRIVATE_TARGETS (resolver: tests). */
export interface TargetRules {
  allowPrivate: boolean;
  resolver?: Resolver;
}

/** A tenant's endpoint URL: http(s), no credentials, at most 2048 characters, a public address. */
export async function validateEndpointUrl(url: string, rules: TargetRules): Promise<string> {
  try {
    return (await checkTargetUrl(url, rules)).toString();
  } catch (e) {
    if (e instanceof OutboundError) throw new AppError("validation_error", `invalid webhook URL: ${e.message}`);
    throw e;
  }
}

function environmentWebhooks(
  env: EnvName,
  secret: SecretRow | undefined,
  endpoint: EndpointRow | undefined,
  now: Date,
): MessageInitShape<typeof EnvironmentWebhooksSchema> {
  const overlap = secret?.previous_secret && secret.previous_expires_at && secret.previous_expires_at > now;
  return {
    environment: toEnvironment(env),
    url: endpoint?.url ?? "",
    urlUpdatedAt: ts(endpoint?.updated_at),
    secret: secret?.secret ?? "",
    secretCreatedAt: ts(secret?.created_at),
    previousSecret: overlap ? secret.previous_secret! : "",
    previousSecretExpiresAt: overlap ? ts(secret.previous_expires_at) : undefined,
    failingSince: ts(endpoint?.failing_since),
    disabledAt: ts(endpoint?.disabled_at),
    disabledReason: endpoint?.disabled_reason ?? "",
  };
}

/** Row → RPC message; the detail members only when `detail`. */
export function toMessage(row: DeliveryRow, detail: boolean): MessageInitShape<typeof DeliverySchema> {
  return {
    id: row.id,
    eventId: row.event_id,
    eventType: row.event_type,
    url: row.url,
    verificationRequestId: row.verification_request_id ?? undefined,
    verificationId: row.verification_id ?? undefined,
    status: row.status,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    responseStatus: row.response_status ?? undefined,
    createdAt: ts(row.created_at),
    updatedAt: ts(row.updated_at),
    errorMessage: row.error_message ?? undefined,
    lastAttemptAt: ts(row.last_attempt_at),
    nextRetryAt: ts(row.next_retry_at),
    ...(detail
      ? {
          requestPayload: row.payload,
          requestHeaders: row.request_headers,
          responseBody: row.response_body ?? undefined,
          attemptLog: row.attempt_log.map((a) => ({
            attempt: a.attempt,
            at: ts(new Date(a.at)),
            status: a.status,
            error: a.error,
            durationMs: a.duration_ms,
            event: a.event ?? "",
            reason: a.reason,
          })),
        }
      : {}),
  };
}

export function webhookRoutes(
  store: WebhookStore,
  clock: Clock,
  onRequeued: () => void,
  targets: TargetRules = { allowPrivate: false },
  sendTest?: (scope: Scope) => Promise<string>,
) {
  const settings = async (tenant: string, env: EnvName) => {
    const [secrets, endpoints] = await Promise.all([store.secrets(tenant), store.endpoints(tenant)]);
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
        const s = await store.ensureSecrets(tenantId(req.tenantId), { live: newWebhookSecret(), test: newWebhookSecret() }, clock.now());
        return { liveSecret: s.live, testSecret: s.test };
      },
      async setEndpoint(req) {
        const tenant = tenantId(req.tenantId);
        const env = envName(req.environment);
        await store.setEndpoint(tenant, env, await validateEndpointUrl(req.url, targets), clock.now());
        return { webhooks: await settings(tenant, env) };
      },
      async removeEndpoint(req) {
        const removed = await store.removeEndpoint(tenantId(req.tenantId), envName(req.environment));
        if (!removed) throw new AppError("not_found", "no webhook endpoint is set for this tenant and environment");
        return { removedUrl: removed };
      },
      async enableEndpoint(req) {
        const tenant = tenantId(req.tenantId);
        const env = envName(req.environment);
        if (!(await store.enableEndpoint(tenant, env))) throw new AppError("not_found", "no webhook endpoint is set for this tenant and environment");
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
        const rotated = await store.rotateSecret(tenant, env, newWebhookSecret(), now, new Date(now.getTime() + ROTATION_OVERLAP_MS));
        if (!rotated) throw new AppError("not_found", "this tenant has no webhook secrets");
        return { webhooks: await settings(tenant, env) };
      },
      async listDeliveries(req) {
        const scope = requireScope(req.scope);
        const { page, limit, offset } = pageRequest(req.page);
        const { rows, total } = await store.list(scope, {
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
        const row = isId("webhookDelivery", req.id) ? await store.get(scope, req.id) : undefined;
        if (!row) throw new AppError("not_found", "webhook delivery not found");
        return { delivery: toMessage(row, true) };
      },
      async getDeliveryStats(req) {
        return store.stats(requireScope(req.scope), new Date(clock.now().getTime() - 24 * 3600_000));
      },
      async retryDelivery(req) {
        const scope = requireScope(req.scope);
        if (!isId("webhookDelivery", req.id)) throw new AppError("not_found", "webhook delivery not found");
        const row = await store.requeueFailed(scope, req.id, clock.now());
        if (!row) {
          const current = await store.get(scope, req.id);
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
