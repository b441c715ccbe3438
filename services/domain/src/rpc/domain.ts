/** The domain RPCs: a few lines each, they validate the request, run the check, convert the outcome. */
import type { ConnectRouter } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { CheckResultSchema, DomainService, ObservationSchema } from "@icv/contracts/gen/icv/domain/v1/domain_service_pb.ts";
import { requireScope, ts } from "@icv/platform";
import type { Detected } from "../detect.ts";
import { requireDomain, requireExpected } from "../names.ts";
import type { CheckOutcome } from "../outcome.ts";
import type { ProviderCheckRequest } from "../provider-check.ts";

export interface DomainChecks {
  dns(domain: string, expected: string): Promise<CheckOutcome>;
  http(domain: string, expected: string): Promise<CheckOutcome>;
  withProvider(req: ProviderCheckRequest): Promise<{ outcome: CheckOutcome; recordRemoved: boolean }>;
  detect(domain: string): Promise<Detected & { nameServers: string[] }>;
  /** The owner's `_icv` policy for this tenant, applied to a check's outcome (policy.ts). */
  policy(domain: string, tenantId: string, outcome: Promise<CheckOutcome>): Promise<CheckOutcome>;
}

const toResult = (o: CheckOutcome) =>
  create(CheckResultSchema, {
    passed: o.passed,
    reason: o.passed ? "" : (o.reason ?? "record_missing"),
    summary: o.summary,
    observations: o.observations.map((ob) => create(ObservationSchema, ob)),
    checkedAt: ts(o.checkedAt),
  });

export function domainRoutes(checks: DomainChecks) {
  return (router: ConnectRouter) =>
    router.service(DomainService, {
      async checkDns(req) {
        const scope = requireScope(req.scope);
        const domain = requireDomain(req.domain);
        return { result: toResult(await checks.policy(domain, scope.tenantId, checks.dns(domain, requireExpected(req.expectedValue)))) };
      },
      async checkHttp(req) {
        const scope = requireScope(req.scope);
        const domain = requireDomain(req.domain);
        return { result: toResult(await checks.policy(domain, scope.tenantId, checks.http(domain, requireExpected(req.expectedValue)))) };
      },
      async checkWithProvider(req) {
        const scope = requireScope(req.scope);
        const domain = requireDomain(req.domain);
        const r = await checks.withProvider({
          domain,
          expected: requireExpected(req.expectedValue),
          provider: req.provider,
          credentials: req.credentials,
        });
        // the owner's policy holds for a record we wrote ourselves too
        return { result: toResult(await checks.policy(domain, scope.tenantId, Promise.resolve(r.outcome))), recordRemoved: r.recordRemoved };
      },
      async detectProvider(req) {
        requireScope(req.scope);
        return checks.detect(requireDomain(req.domain));
      },
    });
}
