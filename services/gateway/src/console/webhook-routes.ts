import { z } from "zod";
import { iso, toEnvironment } from "@icv/platform";
import type { EnvironmentWebhooks } from "@icv/contracts/gen/icv/webhook/v1/webhook_service_pb.ts";
import type { Clients } from "../clients.ts";
import { route, type RouteDef } from "../registry.ts";
import type { Request } from "express";

/** An environment's endpoint as the console shows it: never the secret (shown once, when rotated). */
const endpoint = (w: EnvironmentWebhooks | undefined) => ({
  url: w?.url || null,
  url_updated_at: iso(w?.urlUpdatedAt) ?? null,
  secret_created_at: iso(w?.secretCreatedAt) ?? null,
  previous_secret_expires_at: iso(w?.previousSecretExpiresAt) ?? null,
  failing_since: iso(w?.failingSince) ?? null,
  disabled_at: iso(w?.disabledAt) ?? null,
  disabled_reason: w?.disabledReason || null,
});

const meta = (method: RouteDef["method"], path: string) => ({ method, path, tag: "Console", summary: path, auth: "public" as const, responses: {} });
const scope = (req: Request) => ({ tenantId: req.scope!.tenantId, environment: toEnvironment(req.scope!.env) });

/** `/console/api/{env}/webhook…`: the endpoint of one environment, by RPC to the webhook service (which checks the URL). */
export function webhookRoutes(webhook: Clients["webhook"]): RouteDef[] {
  return [
    route({
      ...meta("get", "/webhook"),
      async handler({ req }) {
        await webhook.ensureTenantSecrets({ tenantId: req.scope!.tenantId });
        const r = await webhook.getTenantWebhooks({ tenantId: req.scope!.tenantId });
        return { body: endpoint(req.scope!.env === "live" ? r.live : r.test) };
      },
    }),
    route({
      ...meta("put", "/webhook"),
      body: z.object({ url: z.string().min(1).max(2048) }).strict(),
      async handler({ req, body }) {
        await webhook.ensureTenantSecrets({ tenantId: req.scope!.tenantId });
        const r = await webhook.setEndpoint({ ...scope(req), url: body.url });
        return { body: endpoint(r.webhooks) };
      },
    }),
    route({
      ...meta("post", "/webhook/enable"),
      async handler({ req }) {
        return { body: endpoint((await webhook.enableEndpoint(scope(req))).webhooks) };
      },
    }),
    route({
      ...meta("post", "/webhook/test"),
      async handler({ req }) {
        const r = await webhook.sendTestEvent({ scope: scope(req) });
        return { status: 201, body: { delivery_id: r.deliveryId } };
      },
    }),
    route({
      ...meta("post", "/webhook/rotate-secret"),
      async handler({ req }) {
        const r = await webhook.rotateSecret(scope(req));
        // the new secret, shown this once
        return { body: { ...endpoint(r.webhooks), secret: r.webhooks?.secret } };
      },
    }),
  ];
}
