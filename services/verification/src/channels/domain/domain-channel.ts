/**
 * What the domain channels share: the domain name's normal form, the lifetime, the mask, and the
 * record value of the checked channels (dns, http, auto), completed by a check and never by a submit.
 */
import { checkRaw, invalid, MIN, notBySubmit, same, type ChallengeSpec, type Channel } from "../channel.ts";
import { noEvidence } from "../shared/evidence.ts";
import { maskGeneric } from "../shared/mask.ts";
import { asciiHostname } from "../shared/names.ts";
import { refused } from "../shared/options.ts";
import { publicToken } from "../shared/secrets.ts";
import { domainPublication, VALUE_PREFIX, type DomainPublication } from "./publication.ts";

export const DOMAIN_TTL_MS = 24 * 60 * MIN;

/** The options a domain channel refuses: each names the domain channel that takes it. */
export const NOT_EMAIL = refused("email_prefix", "email_prefix is only for domain verifications on channel email");
export const NOT_AUTO = refused("dns_provider", "dns_provider is only for domain verifications on channel auto");

/** A checked domain channel (dns, http, auto): a fresh record value, and the instruction it makes from what is published. */
export function checkedChallenge(identifier: string, now: Date, instruction: (p: DomainPublication, value: string) => string): ChallengeSpec {
  const token = publicToken();
  const value = `${VALUE_PREFIX}${token}`;
  return {
    showCode: false,
    expiresAt: new Date(now.getTime() + DOMAIN_TTL_MS),
    message: value,
    domainState: { token, emailPrefix: null },
    instruction: instruction(domainPublication(identifier, value), value),
  };
}

/** The members every checked domain channel has alike. */
export const checked = {
  type: "domain",
  method: "domain_check",
  ttlMs: DOMAIN_TTL_MS,
  evidence: noEvidence,
  // the DNS/HTTP check reads nothing configured: auto takes the provider's credentials in the create body
  missingProvider: () => [],
  normalize: (raw: string) => same(normalizeDomain(checkRaw(raw))),
  complete: (v) => notBySubmit(v, "the DNS/HTTP check"),
  mask: maskGeneric,
} satisfies Partial<Channel>;

const SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;

export function normalizeDomain(input: string): string {
  let rest = input;
  let wasUrl = false;
  const scheme = SCHEME.exec(rest);
  if (scheme) {
    rest = rest.slice(scheme[0].length);
    wasUrl = true;
  } else if (rest.startsWith("//")) {
    rest = rest.slice(2);
    wasUrl = true;
  }
  // Path, query and fragment.
  const end = rest.search(/[/?#]/);
  let host = end === -1 ? rest : rest.slice(0, end);
  // Userinfo only exists in URL form; a bare `name@host` is an email address, not a domain.
  if (wasUrl) {
    const at = host.lastIndexOf("@");
    if (at !== -1) host = host.slice(at + 1);
  }
  if (host.startsWith("[")) invalid("domain must be a domain name, not an IP address");
  const port = /:[0-9]{1,5}$/.exec(host);
  if (port) host = host.slice(0, port.index);
  if (host.length === 0) invalid("domain is missing a host name");

  const ascii = asciiHostname(host, "domain", true);
  // One leading `www.` goes, as long as a registrable-looking name (two labels) remains:
  // `www.com` is itself a domain and stays as it is.
  if (ascii.startsWith("www.") && ascii.slice(4).includes(".")) return ascii.slice(4);
  return ascii;
}
