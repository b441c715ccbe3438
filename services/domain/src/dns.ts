/**
 * The DNS check: TXT `icv-verify={token}` at `_icv-challenge.{domain}`, asked of every
 * authoritative server of the domain directly (up to 4 addresses), not of a cache. It passes only
 * when every server that answers holds the value and at least one answered, so one server with a
 * stale zone cannot decide alone. A CNAME on the challenge name (delegated validation) is followed
 * to the target's own authoritative servers, at most MAX_CNAME hops.
 */
import { authoritativeServers, dataOf, query, recordsOf, serverText, type ResolverOptions } from "./dns-wire.ts";
import { foundList, quoteList, type CheckOutcome, type FailReason, type Observation } from "./outcome.ts";
import { targetRefusal, type TargetRules } from "./targets.ts";

export interface DnsCheckOptions extends ResolverOptions, TargetRules {
  /** The port the authoritative servers are asked on (DNS_AUTHORITATIVE_PORT). */
  authoritativePort: number;
  /** Addresses asked at most (default 4). */
  maxServers?: number;
  now?: () => Date;
}

export const CHALLENGE_LABEL = "_icv-challenge";
const MAX_CNAME = 3;

/** One server's answer, judged. */
interface Seen {
  obs: Observation;
  /** The server answered (NOERROR or NXDOMAIN, with authority). */
  answered: boolean;
  /** A CNAME at the name (and no TXT), to follow. */
  cname?: string;
}

const norm = (n: string) => n.toLowerCase().replace(/\.$/, "");

export async function checkDns(domain: string, expected: string, opts: DnsCheckOptions): Promise<CheckOutcome> {
  const observations: Observation[] = [];
  const challenge = `${CHALLENGE_LABEL}.${domain}`;
  // the zone is looked for from the domain up (the challenge label is not a zone cut)
  const verdict = await checkName(challenge, [challenge], expected, observations, opts, domain);
  return { ...verdict, observations, checkedAt: (opts.now ?? (() => new Date()))() };
}

/** Checks `name` (the challenge name, or a CNAME target on `chain`), appending what each server said. */
async function checkName(
  name: string,
  chain: string[],
  expected: string,
  observations: Observation[],
  opts: DnsCheckOptions,
  zoneFrom = name,
): Promise<{ passed: boolean; summary: string; reason?: FailReason }> {
  const fail = (summary: string, reason: FailReason = "record_mismatch") => ({ passed: false, summary, reason });
  const through = chain.length > 1 ? ` (reached through CNAME from ${chain[0]})` : "";
  const zone = await authoritativeServers(zoneFrom, { ...opts, max: opts.maxServers ?? 4 });
  if ("error" in zone) {
    observations.push({ source: "resolver", found: [], error: zone.error, matched: false });
    return fail(
      `Could not find the authoritative name servers of ${name}: ${zone.error}.`,
      /did not answer/.test(zone.error) ? "unreachable" : "record_missing",
    );
  }
  if (!zone.servers.length) {
    observations.push({ source: "resolver", found: zone.unresolved, error: "the name servers have no address", matched: false });
    return fail(`The name servers of ${zone.zone} (${zone.unresolved.join(", ")}) have no address.`, "unreachable");
  }
  const seen = await Promise.all(zone.servers.map((s) => askServer(s, name, expected, opts)));
  observations.push(...seen.map((s) => s.obs));
  const answered = seen.filter((s) => s.answered);
  const silent = seen.filter((s) => !s.answered);
  if (!answered.length) {
    return fail(
      `None of the ${seen.length} authoritative servers of ${zone.zone} answered for ${name}: ${seen.map((s) => `${s.obs.source} ${s.obs.error}`).join("; ")}.`,
      "unreachable",
    );
  }
  const missing = answered.filter((s) => !s.obs.matched && !s.cname);
  const cnames = [...new Set(answered.filter((s) => s.cname).map((s) => s.cname!))];
  if (missing.length) {
    const what = missing.map(
      (s) =>
        `${s.obs.source} ${s.obs.error.startsWith("NXDOMAIN") ? "answered NXDOMAIN" : s.obs.found.length ? `has ${quoteList(s.obs.found)}` : "has no TXT record there"}`,
    );
    // other values where ours should be: a mismatch (an old token, someone else's); nothing there: missing
    const reason = missing.some((s) => s.obs.found.length) ? "record_mismatch" : "record_missing";
    return fail(`TXT ${JSON.stringify(expected)} is not on every authoritative server of ${zone.zone} at ${name}${through}: ${what.join("; ")}.`, reason);
  }
  if (cnames.length > 1 || (cnames.length === 1 && answered.some((s) => !s.cname))) {
    return fail(
      `The authoritative servers of ${zone.zone} disagree about ${name}: ${answered.map((s) => `${s.obs.source} has ${quoteList(s.obs.found)}`).join("; ")}.`,
    );
  }
  if (cnames.length === 1) {
    const target = cnames[0];
    if (chain.includes(target)) return fail(`The CNAME chain from ${chain[0]} loops at ${target}.`);
    if (chain.length > MAX_CNAME) return fail(`The CNAME chain from ${chain[0]} is longer than ${MAX_CNAME} hops.`);
    const verdict = await checkName(target, [...chain, target], expected, observations, opts);
    // a server answering with the CNAME holds the record exactly when its target does
    for (const s of answered) s.obs.matched = verdict.passed;
    return verdict;
  }
  const note = silent.length ? ` (${silent.length} did not answer: ${silent.map((s) => `${s.obs.source} ${s.obs.error}`).join("; ")})` : "";
  return {
    passed: true,
    summary: `Found TXT ${JSON.stringify(expected)} at ${name}${through} on ${answered.length} of ${seen.length} authoritative servers of ${zone.zone}${note}.`,
  };
}

/** Asks one authoritative server for TXT at `name` and judges its answer. */
async function askServer(s: { name: string; address: string }, name: string, expected: string, opts: DnsCheckOptions): Promise<Seen> {
  const server = { host: s.address, port: opts.authoritativePort };
  const source = `${s.name} (${serverText(server)})`;
  const refused = targetRefusal(s.address, opts);
  if (refused) return { obs: { source, found: [], error: `refused: ${refused}`, matched: false }, answered: false };
  const r = await query(server, name, "TXT", { timeoutMs: opts.timeoutMs, recursive: false, perServer: opts.perServer });
  if (!r.ok) return { obs: { source, found: [], error: r.error, matched: false }, answered: false };
  if (r.rcode !== "NOERROR" && r.rcode !== "NXDOMAIN") return { obs: { source, found: [], error: r.rcode, matched: false }, answered: false };
  if (!r.authoritative) return { obs: { source, found: [], error: "answered without authority (not a server of this zone)", matched: false }, answered: false };
  if (r.rcode === "NXDOMAIN") return { obs: { source, found: [], error: `NXDOMAIN: ${name} does not exist`, matched: false }, answered: true };
  const txt = recordsOf(r.answers, name, "TXT").map((a) => txtValue(dataOf(a) as Buffer[] | Buffer | string));
  if (txt.length) return { obs: { source, found: foundList(txt), error: "", matched: txt.includes(expected) }, answered: true };
  const cname = r.answers.find((a) => a.type === "CNAME" && norm(a.name) === norm(name));
  if (cname) {
    const target = norm(dataOf(cname) as string);
    return { obs: { source, found: [`CNAME ${target}`], error: "", matched: false }, answered: true, cname: target };
  }
  return { obs: { source, found: [], error: "", matched: false }, answered: true };
}

/** One TXT record's value: its character-strings joined (long values are split at 255 bytes). */
const txtValue = (data: Buffer[] | Buffer | string) =>
  (Array.isArray(data) ? data : [data]).map((d) => (Buffer.isBuffer(d) ? d.toString("utf8") : String(d))).join("");
