/**
 * The domain-shaped create (DECISIONS.md "Domains"): POST /verifications/domain, on dns
 * (manual_dns) or http (http_file), with the DNS host its NS records name. The checks that follow
 * are domain-checks.ts.
 */
import { AppError, fromConnectError, type Scope } from "@icv/platform";
import { channelFor } from "../channels/registry.ts";
import { createVerification } from "./create.ts";
import { rpcScope, type UseCaseDeps } from "./deps.ts";
import type { DomainAnswer } from "./domain-checks.ts";
import { checkRecheckInterval } from "./recheck.ts";

/** The spec's verification_method → channel (POST /verifications/domain takes these two). */
const CHANNEL_OF_METHOD: Record<string, string> = { manual_dns: "dns", http_file: "http" };

export interface DomainCreateInput {
  domain: string;
  customerId?: string;
  verificationMethod?: string;
  clientMetadata?: Record<string, unknown>;
  /** Seconds between scheduled re-checks once verified (none when absent). */
  recheckInterval?: number;
}

/** POST /verifications/domain: a domain verification on dns (manual_dns) or http (http_file), with the DNS host named. */
export async function createDomainVerification(deps: UseCaseDeps, scope: Scope, input: DomainCreateInput): Promise<DomainAnswer> {
  const method = input.verificationMethod ?? "manual_dns";
  const channel = Object.hasOwn(CHANNEL_OF_METHOD, method) ? CHANNEL_OF_METHOD[method] : undefined;
  if (!channel) {
    throw new AppError("validation_error", "verification_method must be manual_dns or http_file", {
      details: [{ field: "verification_method", message: "manual_dns or http_file", code: "invalid_enum_value" }],
    });
  }
  const interval = checkRecheckInterval(input.recheckInterval, deps.config.RECHECK_MIN_INTERVAL_S);
  // an invalid domain is refused before anything is looked up
  const domain = channelFor("domain", channel).normalize(input.domain).value;
  const provider = await detectProvider(deps, scope, domain);
  const a = await createVerification(deps, scope, {
    type: "domain",
    channel,
    identifier: domain,
    externalUserId: input.customerId,
    clientMetadata: input.clientMetadata,
    provider,
  });
  if (interval === undefined) return { row: a.row, state: a.domain! };
  await deps.store.checks.setInterval(scope, a.row.id, interval);
  return { row: a.row, state: { ...a.domain!, recheck_interval_s: interval } };
}

/** The DNS host from the domain's NS names; test scopes ask no DNS, and a failed lookup never fails the create. */
async function detectProvider(deps: UseCaseDeps, scope: Scope, domain: string): Promise<{ detected: string; name: string }> {
  const unknown = { detected: "unknown", name: "Unknown" };
  if (scope.env === "test" || !deps.domains) return unknown;
  try {
    const r = await deps.domains.detectProvider({ scope: rpcScope(scope), domain });
    return { detected: r.detected || "unknown", name: r.name || "Unknown" };
  } catch (e) {
    deps.logger.warn({ request_id: scope.requestId, tenant_id: scope.tenantId, error_code: fromConnectError(e).code }, "dns provider detection failed");
    return unknown;
  }
}
