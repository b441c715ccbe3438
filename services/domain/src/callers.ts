import { DomainService } from "@icv/contracts/gen/icv/domain/v1/domain_service_pb.ts";
import { allow } from "@icv/platform";

/**
 * Who may call the domain service, per RPC (mutual TLS: the caller's certificate names it).
 * Everything else is PERMISSION_DENIED. Only the verification service runs domain checks: the
 * gateway reaches them through it (docs/internal-calls.md).
 */
export const domainCallers = [
  allow(DomainService, {
    checkDns: ["verification"],
    checkHttp: ["verification"],
    checkWithProvider: ["verification"],
    detectProvider: ["verification"],
  }),
];
