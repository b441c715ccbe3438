import { ProofService } from "@icv/contracts/gen/icv/proof/v1/proof_service_pb.ts";
import { VerificationService } from "@icv/contracts/gen/icv/verification/v1/verification_service_pb.ts";
import { VerificationRequestService } from "@icv/contracts/gen/icv/verification/v1/verification_request_service_pb.ts";
import { ProjectService } from "@icv/contracts/gen/icv/verification/v1/project_service_pb.ts";
import { ProfileService } from "@icv/contracts/gen/icv/verification/v1/profile_service_pb.ts";
import { SessionService } from "@icv/contracts/gen/icv/session/v1/session_service_pb.ts";
import { WebhookService } from "@icv/contracts/gen/icv/webhook/v1/webhook_service_pb.ts";
import { LogService } from "@icv/contracts/gen/icv/log/v1/log_service_pb.ts";
import { ConnectError, type Client } from "@connectrpc/connect";
import { certificateProblem, checkHealth, rpcClient, toEnvironment, type Config, type Logger, type ServiceName, type TlsIdentity } from "@icv/platform";
import type { Request } from "express";

export interface Clients {
  verification: Client<typeof VerificationService>;
  proof: Client<typeof ProofService>;
  webhook: Client<typeof WebhookService>;
  log: Client<typeof LogService>;
  session: Client<typeof SessionService>;
  requests: Client<typeof VerificationRequestService>;
  projects: Client<typeof ProjectService>;
  profiles: Client<typeof ProfileService>;
  /** Whether a backing service answers its health check (asked as the gateway, over mTLS). */
  health(name: ServiceName): Promise<boolean>;
  /** Base URLs of every backing service, for /health. */
  urls: Record<ServiceName, string>;
}

/** The gateway's clients of the services, all calling as `identity` (the gateway's certificate). */
export function makeClients(config: Config, identity: TlsIdentity, logger: Logger): Clients {
  // why each service is down, logged once per change (a peer of another CA, say, says what to set)
  const down = new Map<ServiceName, string>();
  const health = async (name: ServiceName) => {
    const url = config.serviceUrl(name);
    let reason = "not serving";
    const up = await checkHealth(url, identity, name, undefined, (e) => (reason = certificateProblem(e, config) ?? ConnectError.from(e).rawMessage));
    if (up && down.delete(name)) logger.info({ peer: name, url }, "service up again");
    if (!up && down.get(name) !== reason) {
      down.set(name, reason);
      logger.warn({ peer: name, url, reason }, "service down");
    }
    return up;
  };
  return {
    verification: rpcClient(VerificationService, config.serviceUrl("verification"), identity),
    proof: rpcClient(ProofService, config.serviceUrl("proof"), identity),
    webhook: rpcClient(WebhookService, config.serviceUrl("webhook"), identity),
    log: rpcClient(LogService, config.serviceUrl("log"), identity),
    session: rpcClient(SessionService, config.serviceUrl("session"), identity),
    requests: rpcClient(VerificationRequestService, config.serviceUrl("verification"), identity),
    projects: rpcClient(ProjectService, config.serviceUrl("verification"), identity),
    profiles: rpcClient(ProfileService, config.serviceUrl("verification"), identity),
    health,
    urls: {
      verification: config.serviceUrl("verification"),
      proof: config.serviceUrl("proof"),
      session: config.serviceUrl("session"),
      domain: config.serviceUrl("domain"),
      webhook: config.serviceUrl("webhook"),
      log: config.serviceUrl("log"),
    },
  };
}

/**
 * Calls that wait on a domain check (name servers, a web site, a DNS host's API and the record's
 * propagation, each with its own deadline in the domain service): longer than the default 10 s.
 */
export const DOMAIN_CHECK_CALL = { timeoutMs: 60_000 } as const;

/** The RPC scope of an authenticated request (the auth middleware set req.scope). */
export function scopeOf(req: Request) {
  const s = req.scope!;
  return { tenantId: s.tenantId, environment: toEnvironment(s.env), requestId: req.requestId };
}
