import type { DomainVerification as DomainMsg } from "@icv/contracts/gen/icv/verification/v1/verification_pb.ts";
import { iso } from "@icv/platform";
import { z } from "zod";
import { DOMAIN_CHECK_CALL, scopeOf, type Clients } from "../clients.ts";
import { idParams } from "../input.ts";
import { route, type RouteDef } from "../registry.ts";
import { ErrorBody, jsonObject, timestamp, VERIFICATION_STATUSES } from "../schemas.ts";
import { DomainCheck, toRestCheck } from "./domain-check.ts";
import { toRest, Verification } from "../verification-schemas.ts";

const err = (description: string) => ({ description, schema: ErrorBody });
const TAG = "Domains";

const CreateDomainBody = z
  .object({
    domain: z.string().min(1).max(320).describe("A domain name; a URL is accepted and reduced to its host (`https://WWW.Example.COM/` → `example.com`)"),
    customer_id: z
      .string()
      .min(1)
      .max(255)
      .optional()
      .describe("Your customer the domain belongs to (the verification's external_user_id: verified users group by it)"),
    verification_method: z.enum(["manual_dns", "http_file"]).optional().describe("manual_dns (default): a TXT record; http_file: a file on the web server"),
    client_metadata: jsonObject.optional(),
    recheck_interval: z
      .number()
      .optional()
      .describe(
        "Seconds between scheduled re-checks once verified (a whole number, at least RECHECK_MIN_INTERVAL_S, default 3600): a failed re-check suspends the proof, a passing one reinstates it",
      ),
  })
  .strict()
  .meta({ id: "CreateDomainVerification" });

const DomainView = z
  .object({
    id: z.string(),
    domain: z.string(),
    status: z.enum(VERIFICATION_STATUSES).describe("pending until the check finds the record or file, then verified (expired after 24 h)"),
    verification_method: z.enum(["manual_dns", "http_file", "email", "auto"]),
    dns_record: z
      .object({ type: z.literal("TXT"), name: z.string(), value: z.string() })
      .optional()
      .describe("manual_dns: publish this TXT record"),
    http_file: z.object({ path: z.string(), content: z.string() }).optional().describe("http_file: serve this file (http:// or https://)"),
    provider: z.object({ detected: z.string(), name: z.string() }).describe("The DNS host named by the domain's NS records (test keys: unknown)"),
    recheck_interval: z.number().int().optional().describe("Seconds between scheduled re-checks, when asked for"),
    expires_at: timestamp,
  })
  .meta({ id: "DomainVerification" });

const DomainCheckResult = z
  .object({
    id: z.string(),
    domain: z.string(),
    status: z.enum(VERIFICATION_STATUSES).describe("pending, verified, or suspended (a re-check of a verified domain failed; a passing one reinstates it)"),
    verified: z.boolean(),
    verified_at: timestamp.optional(),
    suspended_at: timestamp.optional().describe("While suspended: since when"),
    reason: z
      .enum(["record_missing", "record_mismatch", "unreachable", "policy_refused"])
      .optional()
      .describe("While suspended: why (the failed check's reason)"),
    check_count: z.number().int().describe("Checks run so far (each /check and /verify counts, and each scheduled re-check)"),
    verification_method: z.enum(["manual_dns", "http_file", "email", "auto"]),
    last_check: DomainCheck.optional(),
    recheck_interval: z.number().int().optional().describe("Seconds between scheduled re-checks, when asked for at create"),
    next_recheck_at: timestamp.optional().describe("When the next scheduled re-check is due"),
    expires_at: timestamp,
  })
  .meta({ id: "DomainCheckResult" });

const VerifyResult = Verification.extend({ last_check: DomainCheck.optional() }).meta({ id: "VerifyResult" });

const method = (d: DomainMsg) => d.verificationMethod as "manual_dns" | "http_file" | "email" | "auto";

function toDomainView(d: DomainMsg) {
  return {
    id: d.id,
    domain: d.domain,
    status: d.status,
    verification_method: method(d),
    ...(d.dnsRecord ? { dns_record: { type: "TXT" as const, name: d.dnsRecord.name, value: d.dnsRecord.value } } : {}),
    ...(d.httpFile ? { http_file: { path: d.httpFile.path, content: d.httpFile.content } } : {}),
    provider: { detected: d.provider?.detected ?? "unknown", name: d.provider?.name ?? "Unknown" },
    ...(d.recheckInterval ? { recheck_interval: d.recheckInterval } : {}),
    expires_at: iso(d.expiresAt)!,
  };
}

type Reason = "record_missing" | "record_mismatch" | "unreachable" | "policy_refused";

function toCheckResult(d: DomainMsg) {
  const last = toRestCheck(d.lastCheck);
  return {
    id: d.id,
    domain: d.domain,
    status: d.status,
    verified: d.status === "verified",
    ...(d.verifiedAt ? { verified_at: iso(d.verifiedAt) } : {}),
    ...(d.suspendedAt ? { suspended_at: iso(d.suspendedAt), reason: d.suspendedReason as Reason } : {}),
    check_count: d.checkCount,
    verification_method: method(d),
    ...(last ? { last_check: last } : {}),
    ...(d.recheckInterval ? { recheck_interval: d.recheckInterval } : {}),
    ...(d.nextRecheckAt ? { next_recheck_at: iso(d.nextRecheckAt) } : {}),
    expires_at: iso(d.expiresAt)!,
  };
}

const CHECK_ERRORS = {
  400: err("challenge_expired: the 24 h ran out; create a new verification"),
  404: err("not_found"),
  409: err("invalid_state: not a domain verification checked by DNS or HTTP (by email: submit the code), or failed/revoked"),
  429: err("rate_limited: one check per 5 s per verification; Retry-After and error.retry_after say when"),
  503: err("service_unavailable: the domain service is down"),
};

/** Domain verification (B2B): the domain-shaped create and check, and /verify on any verification. */
export function domainRoutes(c: Clients): RouteDef[] {
  return [
    route({
      method: "post",
      path: "/api/v1/verifications/domain",
      tag: TAG,
      summary: "Start a domain verification: the TXT record (manual_dns) or file (http_file) to publish, and the detected DNS host",
      description:
        "Creates a `type: domain` verification (channel dns or http). It stays pending until a check finds the record or file, and expires after 24 h.",
      auth: "key",
      body: CreateDomainBody,
      responses: { 201: { description: "Created", schema: DomainView }, 400: err("validation_error or invalid_identifier") },
      async handler({ req, body }) {
        const r = await c.verification.createDomainVerification(
          {
            scope: scopeOf(req),
            domain: body.domain,
            customerId: body.customer_id,
            verificationMethod: body.verification_method,
            clientMetadata: body.client_metadata as never,
            recheckInterval: body.recheck_interval,
          },
          DOMAIN_CHECK_CALL,
        );
        return { status: 201, body: toDomainView(r.domain!) };
      },
    }),
    route({
      method: "post",
      path: "/api/v1/verifications/domain/{id}/check",
      tag: TAG,
      summary: "Check a domain verification now: verified once every authoritative server holds the record (or the file is served)",
      description:
        "Every check counts (check_count). On a verified domain it re-checks: a failure suspends the proof (status suspended, reason and last_check say why; " +
        "unreachable only after 3 in a row), a later pass reinstates it. Re-checks never revoke; an expired proof is not re-checked (invalid_state). " +
        "The owner's _icv policy record is enforced on every check. Test keys ask no DNS: test-verify completes them.",
      auth: "key",
      params: idParams("verification"),
      responses: { 200: { description: "What the check found", schema: DomainCheckResult }, ...CHECK_ERRORS },
      async handler({ req, params }) {
        const r = await c.verification.checkDomainVerification({ scope: scopeOf(req), id: params.id }, DOMAIN_CHECK_CALL);
        return { body: toCheckResult(r.domain!) };
      },
    }),
    route({
      method: "post",
      path: "/api/v1/verifications/{id}/verify",
      tag: "Verifications",
      summary: "Run the DNS or HTTP check of a domain verification now; answers the verification with what the check saw",
      description: "The same check as /verifications/domain/{id}/check. Any other type is invalid_state.",
      auth: "key",
      params: idParams("verification"),
      responses: {
        200: { description: "The verification (verified with its proof once found) and last_check", schema: VerifyResult },
        ...CHECK_ERRORS,
      },
      async handler({ req, params }) {
        const r = await c.verification.checkDomainVerification({ scope: scopeOf(req), id: params.id }, DOMAIN_CHECK_CALL);
        const last = toRestCheck(r.domain?.lastCheck);
        return { body: { ...toRest(r.verification!), ...(last ? { last_check: last } : {}) } };
      },
    }),
  ];
}
