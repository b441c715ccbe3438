/**
 * Domain checks (DECISIONS.md "Domains"): the domain-shaped create, a check run by the domain
 * service (/verify, /verifications/domain/:id/check, the hosted page's "check now"), and the
 * provider chain of channel auto. The verification service owns the state (token, count, what the
 * last check saw); the domain service only looks.
 */
import type { CheckResult } from "@icv/contracts/gen/icv/domain/v1/domain_service_pb.ts";
import { AppError, domainRechecks, fromConnectError, iso, type Scope } from "@icv/platform";
import { checkProofMethod, VALUE_PREFIX } from "../channels/domain/publication.ts";
import { channelFor } from "../channels/registry.ts";
import type { DomainCheckRow, StoredCheck, VerificationRow } from "../store/index.ts";
import { rpcScope, type Answer, type UseCaseHost } from "./deps.ts";
import { applyRecheck, checkRecheckInterval, RECHECK_LEASE_MS, refuseExpired, scheduleAfter } from "./recheck.ts";

/** At most one check per verification in this window: a tenant cannot use us to hammer a name server. */
export const CHECK_GAP_MS = 5_000;
/** The spec's verification_method → channel (POST /verifications/domain takes these two). */
const CHANNEL_OF_METHOD: Record<string, string> = { manual_dns: "dns", http_file: "http" };
const MAX_OBSERVATIONS = 16;
const MAX_FOUND = 8;
const MAX_FOUND_LENGTH = 300;

export interface DomainAnswer {
  row: VerificationRow;
  state: DomainCheckRow;
}

export interface DomainCreateInput {
  domain: string;
  customerId?: string;
  verificationMethod?: string;
  clientMetadata?: Record<string, unknown>;
  /** Seconds between scheduled re-checks once verified (none when absent). */
  recheckInterval?: number;
}

/** POST /verifications/domain: a domain verification on dns (manual_dns) or http (http_file), with the DNS host named. */
export async function createDomainVerification(vs: UseCaseHost, scope: Scope, input: DomainCreateInput): Promise<DomainAnswer> {
  const method = input.verificationMethod ?? "manual_dns";
  const channel = Object.hasOwn(CHANNEL_OF_METHOD, method) ? CHANNEL_OF_METHOD[method] : undefined;
  if (!channel) {
    throw new AppError("validation_error", "verification_method must be manual_dns or http_file", {
      details: [{ field: "verification_method", message: "manual_dns or http_file", code: "invalid_enum_value" }],
    });
  }
  const interval = checkRecheckInterval(input.recheckInterval, vs.d.config.RECHECK_MIN_INTERVAL_S);
  // an invalid domain is refused before anything is looked up
  const domain = channelFor("domain", channel).normalize(input.domain).value;
  const provider = await detectProvider(vs, scope, domain);
  const a = await vs.create(scope, {
    type: "domain",
    channel,
    identifier: domain,
    externalUserId: input.customerId,
    clientMetadata: input.clientMetadata,
    provider,
  });
  if (interval === undefined) return { row: a.row, state: a.domain! };
  await vs.d.store.checks.setInterval(scope, a.row.id, interval);
  return { row: a.row, state: { ...a.domain!, recheck_interval_s: interval } };
}

/** The DNS host from the domain's NS names; test scopes ask no DNS, and a failed lookup never fails the create. */
async function detectProvider(vs: UseCaseHost, scope: Scope, domain: string): Promise<{ detected: string; name: string }> {
  const unknown = { detected: "unknown", name: "Unknown" };
  if (scope.env === "test" || !vs.d.domains) return unknown;
  try {
    const r = await vs.d.domains.detectProvider({ scope: rpcScope(scope), domain });
    return { detected: r.detected || "unknown", name: r.name || "Unknown" };
  } catch (e) {
    vs.d.logger.warn({ request_id: scope.requestId, tenant_id: scope.tenantId, error_code: fromConnectError(e).code }, "dns provider detection failed");
    return unknown;
  }
}

/**
 * Runs the check of a domain verification now. Pending: found → verified (dns_txt or http_file).
 * Verified or suspended: a re-check that suspends or reinstates the proof (recheck.ts).
 * Every check counts; one per CHECK_GAP_MS (rate_limited with retry_after).
 */
export async function checkDomain(vs: UseCaseHost, scope: Scope, id: string): Promise<DomainAnswer> {
  const v = await vs.get(scope, id);
  if (v.type !== "domain") throw new AppError("invalid_state", `only domain verifications are checked; this is a ${v.type} verification`);
  if (v.channel === "email")
    throw new AppError("invalid_state", "a domain verification by email is completed by the code mailed to the domain (submit), not by a check");
  if (v.status === "expired") throw new AppError("challenge_expired", "the challenge has expired; create a new verification");
  if (v.status !== "pending" && v.status !== "verified" && v.status !== "suspended") throw new AppError("invalid_state", `verification is ${v.status}`);
  const now = vs.d.clock.now();
  refuseExpired(v, now);
  const claim = await vs.d.store.checks.claim(scope, id, now, CHECK_GAP_MS, new Date(now.getTime() + RECHECK_LEASE_MS));
  if (!claim) throw new AppError("invalid_state", "this domain verification has no check record; create a new one");
  if ("retryAt" in claim) {
    const retryAfter = Math.max(1, Math.ceil((claim.retryAt.getTime() - now.getTime()) / 1000));
    throw new AppError("rate_limited", `a domain verification can be checked once every ${CHECK_GAP_MS / 1000} s; try again in ${retryAfter} s`, {
      extra: { retry_after: retryAfter },
    });
  }
  const result = await runCheck(vs, scope, v, claim.row, now);
  return settle(vs, scope, v, { ...claim.row, last_check: result }, checkProofMethod(v.channel));
}

/**
 * Channel auto, right after the create: the domain service writes the record through the
 * provider's API, checks it and removes it. The credentials live only in this call chain (never
 * stored or logged). Test scopes call nothing. A chain that cannot run leaves the verification
 * pending with a last_check saying why.
 */
export async function providerCheck(vs: UseCaseHost, scope: Scope, a: Answer, access: { name: string; credentials: Record<string, string> }): Promise<Answer> {
  const now = vs.d.clock.now();
  const claim = await vs.d.store.checks.claim(scope, a.row.id, now, CHECK_GAP_MS);
  if (!claim || "retryAt" in claim) return a;
  let result: StoredCheck;
  if (scope.env === "test") {
    result = note(now, `Test mode: ${access.name}'s API was not called and no DNS was asked; complete it with test-verify.`);
  } else if (!vs.d.domains) {
    result = note(now, "The domain service is not reachable from here; nothing was written.");
  } else {
    try {
      const r = await vs.d.domains.checkWithProvider({
        scope: rpcScope(scope),
        domain: a.row.identifier,
        expectedValue: recordValue(claim.row),
        provider: access.name,
        credentials: access.credentials,
      });
      result = stored(r.result, now);
    } catch (e) {
      const err = fromConnectError(e);
      vs.d.logger.warn(
        { request_id: scope.requestId, tenant_id: scope.tenantId, verification_id: a.row.id, error_code: err.code },
        "dns provider check failed",
      );
      result = note(
        now,
        `The check through ${access.name}'s API could not run (${err.code}); nothing is left in your zone by us. Create a new verification to try again.`,
      );
    }
  }
  const done = await settle(vs, scope, a.row, { ...claim.row, last_check: result }, checkProofMethod(a.row.channel, true));
  return { row: done.row, domain: done.state };
}

async function runCheck(vs: UseCaseHost, scope: Scope, v: VerificationRow, state: DomainCheckRow, now: Date): Promise<StoredCheck> {
  if (scope.env === "test") return note(now, "Test mode: no DNS or HTTP lookup was made; complete it with test-verify.");
  const domains = vs.d.domains;
  if (!domains) throw new AppError("service_unavailable", "the domain service is not available");
  const req = { scope: rpcScope(scope), domain: v.identifier, expectedValue: recordValue(state) };
  // dns, and auto after its provider chain (the user may have published the record by hand)
  const r = v.channel === "http" ? await domains.checkHttp(req) : await domains.checkDns(req);
  return stored(r.result, now);
}

/** Keeps what the check saw; a pending verification whose check passed becomes verified with its proof. */
async function settle(
  vs: UseCaseHost,
  scope: Scope,
  v: VerificationRow,
  state: DomainCheckRow,
  method: ReturnType<typeof checkProofMethod>,
): Promise<DomainAnswer> {
  const check = state.last_check!;
  const streak = await vs.d.store.checks.recordCheck(scope, v.id, check);
  const row = v.status === "pending" ? (check.passed ? await vs.complete(scope, v, method) : v) : await applyRecheck(vs, scope, v, check, streak);
  const next = await scheduleAfter(vs, scope, state, row, v.status === "pending");
  if (v.status !== "pending" && scope.env === "live") {
    const change = row.status === v.status ? "none" : row.status === "suspended" ? "suspended" : "reinstated";
    domainRechecks.inc({ trigger: check.scheduled ? "scheduled" : "call", outcome: check.passed ? "passed" : (check.reason ?? "unknown"), change });
  }
  vs.d.logger.info(
    {
      request_id: scope.requestId,
      tenant_id: scope.tenantId,
      verification_id: v.id,
      passed: check.passed,
      reason: check.reason,
      check_count: state.check_count,
      recheck: v.status !== "pending",
      scheduled: check.scheduled === true,
      status: row.status,
    },
    "domain checked",
  );
  return { row, state: { ...state, unreachable_count: streak, next_recheck_at: next ?? state.next_recheck_at } };
}

/**
 * The re-check sweeper (every RECHECK_SWEEP_MS, on every replica): claims up to RECHECK_BATCH due
 * re-checks (no other replica gets them: claimDue) and runs them together; the domain service
 * bounds the questions per name server. A check that throws keeps its lease: it is tried again
 * when the lease runs out. Answers how many were claimed.
 */
export async function recheckDue(vs: UseCaseHost): Promise<number> {
  const now = vs.d.clock.now();
  const due = await vs.d.store.checks.claimDue(now, vs.d.config.RECHECK_BATCH, new Date(now.getTime() + RECHECK_LEASE_MS));
  await Promise.all(
    due.map(async (state) => {
      const scope: Scope = { tenantId: state.tenant_id, env: state.environment };
      try {
        const v = await vs.get(scope, state.verification_id);
        if (v.status !== "verified" && v.status !== "suspended") return;
        const result = await runCheck(vs, scope, v, state, now);
        await settle(vs, scope, v, { ...state, last_check: { ...result, scheduled: true } }, checkProofMethod(v.channel));
      } catch (e) {
        vs.d.logger.warn(
          { tenant_id: scope.tenantId, verification_id: state.verification_id, error_code: fromConnectError(e).code },
          "scheduled domain re-check failed; retried when its lease ends",
        );
      }
    }),
  );
  return due.length;
}

const recordValue = (s: DomainCheckRow) => `${VALUE_PREFIX}${s.token}`;

const note = (now: Date, summary: string): StoredCheck => ({ passed: false, summary, checked_at: now.toISOString(), observations: [] });

/** The domain service's answer, bounded (what we keep and show). */
function stored(r: CheckResult | undefined, now: Date): StoredCheck {
  const cut = (s: string) => (s.length > MAX_FOUND_LENGTH ? `${s.slice(0, MAX_FOUND_LENGTH)}…` : s);
  const passed = r?.passed ?? false;
  return {
    passed,
    ...(passed ? {} : { reason: r?.reason || "unreachable" }),
    summary: cut(r?.summary ?? "the check gave no answer"),
    checked_at: iso(r?.checkedAt) ?? now.toISOString(),
    observations: (r?.observations ?? []).slice(0, MAX_OBSERVATIONS).map((o) => ({
      source: cut(o.source),
      found: o.found.slice(0, MAX_FOUND).map(cut),
      error: cut(o.error),
      matched: o.matched,
    })),
  };
}
