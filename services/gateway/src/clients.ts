import type { Client } from "@connectrpc/connect";
import { ProofService } from "@icv/contracts/gen/icv/proof/v1/proof_service_pb.ts";
import { VerificationService } from "@icv/contracts/gen/icv/verification/v1/verification_service_pb.ts";
import { SessionService } from "@icv/contracts/gen/icv/session/v1/session_service_pb.ts";
import { WebhookService } from "@icv/contracts/gen/icv/webhook/v1/webhook_service_pb.ts";
import { rpcClient, toEnvironment, type Config, type ServiceName } from "@icv/platform";
import type { Request } from "express";

export interface Clients {
  verification: Client<typeof VerificationService>;
  proof: Client<typeof ProofService>;
  webhook: Client<typeof WebhookService>;
  session: Client<typeof SessionService>;
  /** Base URLs of every backing service, for /health. */
  urls: Record<ServiceName, string>;
}

export function makeClients(config: Config): Clients {
  return {
    verification: rpcClient(VerificationService, config.serviceUrl("verification")),
    proof: rpcClient(ProofService, config.serviceUrl("proof")),
    webhook: rpcClient(WebhookService, config.serviceUrl("webhook")),
    session: rpcClient(SessionService, config.serviceUrl("session")),
    urls: {
      verification: config.serviceUrl("verification"),
      proof: config.serviceUrl("proof"),
      session: config.serviceUrl("session"),
      domain: config.serviceUrl("domain"),
      webhook: config.serviceUrl("webhook"),
    },
  };
}

/** The RPC scope of an authenticated request (the auth middleware set req.scope). */
export function scopeOf(req: Request) {
  const s = req.scope!;
  return { tenantId: s.tenantId, environment: toEnvironment(s.env), requestId: req.requestId };
}
