import { randomBytes } from "node:crypto";
import type { ConnectRouter } from "@connectrpc/connect";
import { WebhookService } from "@icv/contracts/gen/icv/webhook/v1/webhook_service_pb.ts";
import { AppError, isId, type Clock } from "@icv/platform";
import type { WebhookStore } from "./store.ts";

export const newWebhookSecret = (): string => `whsec_${randomBytes(32).toString("base64url")}`;

export function webhookRoutes(store: WebhookStore, clock: Clock) {
  return (router: ConnectRouter) =>
    router.service(WebhookService, {
      async ensureTenantSecrets(req) {
        if (!isId("tenant", req.tenantId)) throw new AppError("validation_error", "tenant_id must be a tenant id");
        const s = await store.ensureSecrets(req.tenantId, { live: newWebhookSecret(), test: newWebhookSecret() }, clock.now());
        return { liveSecret: s.live, testSecret: s.test };
      },
    });
}
