/** What a check saw: the plain shape of icv.domain.v1.CheckResult, built by dns.ts, http.ts and the provider flow. */

export interface Observation {
  /** `ns1.example.com (192.0.2.1:53)` for DNS, the URL for HTTP, `{provider} API` for writes. */
  source: string;
  /** TXT values seen, or the HTTP status and the first bytes of the body. */
  found: string[];
  /** Empty when the source answered; else what went wrong. */
  error: string;
  matched: boolean;
}

/** Why a check failed (DECISIONS.md, Current control). */
export type FailReason = "record_missing" | "record_mismatch" | "unreachable" | "policy_refused";

export interface CheckOutcome {
  passed: boolean;
  /** Set when it failed. */
  reason?: FailReason;
  /** One sentence: what passed, or exactly what was missing and where. */
  summary: string;
  observations: Observation[];
  checkedAt: Date;
}

/** At most this many values kept per observation, each cut to PREVIEW characters (input limits on what others publish). */
const MAX_FOUND = 10;
const PREVIEW = 200;

export const preview = (v: string) => {
  const clean = v.replace(/[\u0000-\u001f\u007f]/g, (c) => (c === "\n" ? "\\n" : c === "\r" ? "\\r" : c === "\t" ? "\\t" : "?"));
  return clean.length > PREVIEW ? `${clean.slice(0, PREVIEW)}…` : clean;
};

export const foundList = (values: string[]) => {
  const shown = values.slice(0, MAX_FOUND).map(preview);
  return values.length > MAX_FOUND ? [...shown, `… and ${values.length - MAX_FOUND} more`] : shown;
};

export const quoteList = (values: string[]) => values.map((v) => JSON.stringify(v)).join(", ");
