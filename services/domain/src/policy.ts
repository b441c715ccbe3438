/**
 * The domain owner's policy (DECISIONS.md, Current control), as CAA is for certificate
 * authorities: TXT records `v=icv1; issuer=<iss>[; tenant=<ten_…>]` at `_icv.{domain}`, asked of
 * every authoritative server of the domain as the challenge record is. When any well-formed
 * `v=icv1` record exists, a check passes only if one of them names this service's issuer and, if
 * it names a tenant, the verification's tenant. A malformed record means nothing: it is ignored
 * and shown. Without a record nothing changes.
 */
import { authoritativeServers, dataOf, query, recordsOf, serverText, type ResolverOptions } from "./dns-wire.ts";
import { foundList, type CheckOutcome, type Observation } from "./outcome.ts";
import { targetRefusal, type TargetRules } from "./targets.ts";

export const POLICY_LABEL = "_icv";
const VERSION = /^\s*v\s*=\s*icv1\s*(;|$)/i;
const TENANT = /^ten_[A-Za-z0-9]{1,64}$/;

export interface PolicyOptions extends ResolverOptions, TargetRules {
  authoritativePort: number;
  maxServers?: number;
}

export type PolicyRecord = { issuer: string; tenant?: string } | { malformed: string };

/** One TXT value: undefined when it is no `v=icv1` record at all (another use of the name). */
export function parsePolicy(value: string): PolicyRecord | undefined {
  if (!VERSION.test(value)) return undefined;
  const fields = new Map<string, string>();
  for (const part of value.split(";")) {
    if (!part.trim()) continue;
    const eq = part.indexOf("=");
    if (eq < 1) return { malformed: `"${part.trim()}" is not key=value` };
    const key = part.slice(0, eq).trim().toLowerCase();
    if (fields.has(key)) return { malformed: `${key} is given twice` };
    if (key !== "v" && key !== "issuer" && key !== "tenant") return { malformed: `unknown key ${key}` };
    fields.set(key, part.slice(eq + 1).trim());
  }
  const issuer = fields.get("issuer");
  if (!issuer) return { malformed: "no issuer" };
  const tenant = fields.get("tenant");
  if (tenant !== undefined && !TENANT.test(tenant)) return { malformed: `tenant ${tenant} is not a tenant id (ten_…)` };
  return tenant === undefined ? { issuer } : { issuer, tenant };
}

const sameIssuer = (a: string, b: string) => a.replace(/\/+$/, "") === b.replace(/\/+$/, "");

/** What the policy says for `issuer` and `tenant`: none, allowed or refused, with one observation per server that holds a v=icv1 record. */
export async function checkPolicy(
  domain: string,
  who: { issuer: string; tenantId: string },
  opts: PolicyOptions,
): Promise<{ verdict: "none" | "allowed" | "refused"; observations: Observation[] }> {
  const name = `${POLICY_LABEL}.${domain}`;
  const zone = await authoritativeServers(domain, { ...opts, max: opts.maxServers ?? 4 });
  // no servers: the challenge check fails on its own and says why
  if ("error" in zone) return { verdict: "none", observations: [] };
  const observations: Observation[] = [];
  let any = false;
  let allowed = false;
  await Promise.all(
    zone.servers.map(async (s) => {
      const server = { host: s.address, port: opts.authoritativePort };
      if (targetRefusal(s.address, opts)) return;
      const r = await query(server, name, "TXT", { timeoutMs: opts.timeoutMs, recursive: false, perServer: opts.perServer });
      // a server that does not answer here did not answer the challenge either (shown there)
      if (!r.ok || r.rcode !== "NOERROR" || !r.authoritative) return;
      const values = recordsOf(r.answers, name, "TXT").map((a) => {
        const d = dataOf(a) as Buffer[] | Buffer | string;
        return (Array.isArray(d) ? d : [d]).map((x) => (Buffer.isBuffer(x) ? x.toString("utf8") : String(x))).join("");
      });
      const policies = values.map((v) => ({ v, p: parsePolicy(v) })).filter((x) => x.p !== undefined);
      if (!policies.length) return;
      const valid = policies.flatMap((x) => (x.p && "issuer" in x.p ? [x.p] : []));
      const malformed = policies.flatMap((x) => (x.p && "malformed" in x.p ? [`${x.p.malformed}`] : []));
      const permits = valid.some((p) => sameIssuer(p.issuer, who.issuer) && (p.tenant === undefined || p.tenant === who.tenantId));
      if (valid.length) any = true;
      if (permits) allowed = true;
      observations.push({
        source: `${name} at ${s.name} (${serverText(server)})`,
        found: foundList(policies.map((x) => x.v)),
        error: malformed.length ? `malformed policy record ignored: ${malformed.join("; ")}` : "",
        matched: valid.length > 0 && permits,
      });
    }),
  );
  observations.sort((a, b) => a.source.localeCompare(b.source));
  return { verdict: !any ? "none" : allowed ? "allowed" : "refused", observations };
}

/** A check's outcome with the policy applied: a refusal fails it with reason policy_refused; the policy's observations are added. */
export function withPolicy(outcome: CheckOutcome, policy: Awaited<ReturnType<typeof checkPolicy>>, issuer: string): CheckOutcome {
  const observations = [...outcome.observations, ...policy.observations];
  if (policy.verdict !== "refused") return { ...outcome, observations };
  return {
    ...outcome,
    passed: false,
    reason: "policy_refused",
    summary: `The domain's policy record (${POLICY_LABEL} TXT v=icv1) does not name this issuer (${issuer}) or this tenant, so no proof of it is made or kept.`,
    observations,
  };
}
