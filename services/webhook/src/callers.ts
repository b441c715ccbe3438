import { WebhookService } from "@icv/contracts/gen/icv/webhook/v1/webhook_service_pb.ts";
import { allow } from "@icv/platform";

/**
 * Who may call the webhook service, per RPC (mutual TLS: the caller's certificate names it).
 * Only the gateway: its public webhook routes and its admin listener (the admin CLI reaches
 * secrets only through the gateway's admin API). Everything else is PERMISSION_DENIED.
 */
export const webhookCallers = [
  allow(WebhookService, {
    // these answer with the tenant's signing secrets
    ensureTenantSecrets: ["gateway"],
    getTenantWebhooks: ["gateway"],
    rotateSecret: ["gateway"],
    setEndpoint: ["gateway"],
    removeEndpoint: ["gateway"],
    enableEndpoint: ["gateway"],
    listDeliveries: ["gateway"],
    getDelivery: ["gateway"],
    getDeliveryStats: ["gateway"],
    retryDelivery: ["gateway"],
    sendTestEvent: ["gateway"],
  }),
];
