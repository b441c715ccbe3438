/**
 * Channel `auto`: the TXT record written through the DNS host's own API, the DNS check run on it
 * (again every POLL_MS until it passes or the propagation time is up), and the record removed
 * whatever the check said. The credentials reach only the host's client object of this one call.
 */
import { AppError } from "@icv/platform";
import { CHALLENGE_LABEL } from "./dns.ts";
import type { CheckOutcome, Observation } from "./outcome.ts";
import { DNS_HOST_APIS, ProviderError, type WrittenRecord } from "./providers/registry.ts";

export interface ProviderCheckRequest {
  domain: string;
  expected: string;
  provider: string;
  credentials: Readonly<Record<string, string>>;
}

export interface ProviderCheckDeps {
  /** The DNS check (dns.ts with the service's resolvers). */
  checkDns(domain: string, expected: string): Promise<CheckOutcome>;
  /** The API base URL of each host (DNS_API_{HOST}_URL). */
  baseUrls: Readonly<Record<string, string>>;
  /** How long the record is waited for (DNS_PROPAGATION_TIMEOUT_MS). */
  propagationMs: number;
  pollMs?: number;
  now?: () => Date;
}

const MAX_CREDENTIAL_LENGTH = 4096;

/** The request's provider and credentials, checked (validation_error names what is wrong, never a value). */
export function validateProviderRequest(req: ProviderCheckRequest): void {
  const def = DNS_HOST_APIS[req.provider];
  if (!def) throw new AppError("validation_error", `provider must be one of ${Object.keys(DNS_HOST_APIS).join(", ")}`);
  for (const field of def.credentials) {
    const v = req.credentials[field];
    if (!v) throw new AppError("validation_error", `${req.provider} credentials need ${def.credentials.join(" and ")} (${field} is missing)`);
    if (v.length > MAX_CREDENTIAL_LENGTH || /[\r\n]/.test(v)) throw new AppError("validation_error", `${req.provider} credential ${field} is not valid`);
  }
}

export async function checkWithProvider(req: ProviderCheckRequest, deps: ProviderCheckDeps): Promise<{ outcome: CheckOutcome; recordRemoved: boolean }> {
  validateProviderRequest(req);
  const def = DNS_HOST_APIS[req.provider];
  const now = deps.now ?? (() => new Date());
  const source = `${req.provider} API`;
  const name = `${CHALLENGE_LABEL}.${req.domain}`;
  const client = def.client(deps.baseUrls[req.provider], req.credentials);
  // a host's error text is shown to the user: never with a credential in it, even if the host echoed one
  const scrub = (m: string) => Object.values(req.credentials).reduce((t, v) => (v.length >= 4 ? t.split(v).join("[redacted]") : t), m);

  let record: WrittenRecord;
  try {
    record = await client.write(req.domain, name, req.expected);
  } catch (e) {
    if (!(e instanceof ProviderError)) throw e;
    const obs: Observation = { source, found: [], error: scrub(e.message), matched: false };
    return {
      outcome: {
        passed: false,
        summary: `Could not write TXT ${name} through ${def.name}: ${scrub(e.message)}.`,
        observations: [obs],
        checkedAt: now(),
      },
      recordRemoved: false,
    };
  }

  const wrote: Observation = { source, found: [`wrote TXT ${name} ${JSON.stringify(req.expected)}`], error: "", matched: true };
  let outcome: CheckOutcome | undefined;
  let removal: Observation;
  let removed = false;
  try {
    const deadline = Date.now() + deps.propagationMs;
    for (;;) {
      outcome = await deps.checkDns(req.domain, req.expected);
      if (outcome.passed || Date.now() + (deps.pollMs ?? 1_000) > deadline) break;
      await new Promise((r) => setTimeout(r, deps.pollMs ?? 1_000));
    }
  } finally {
    try {
      await client.remove(record);
      removed = true;
      removal = { source, found: [`removed TXT ${name}`], error: "", matched: true };
    } catch (e) {
      // biome-ignore lint/correctness/noUnsafeFinally: a fault that is not the provider's answer must not be hidden behind the check's outcome
      if (!(e instanceof ProviderError)) throw e;
      removal = { source, found: [], error: `could not remove the record: ${scrub(e.message)}`, matched: false };
    }
  }
  const after = removed
    ? `The record was written through ${def.name} and removed again.`
    : `The record could not be removed (${removal.error}); remove TXT ${name} by hand.`;
  return {
    outcome: {
      passed: outcome.passed,
      summary: `${outcome.summary} ${after}`,
      observations: [wrote, ...outcome.observations, removal],
      checkedAt: now(),
    },
    recordRemoved: removed,
  };
}
