/** Domains (DECISIONS.md "Domains"): the record and the file that hold the challenge value, and the check's names. */
import type { ProofMethod } from "@icv/platform";

export const RECORD_LABEL = "_icv-challenge";
export const FILE_PATH = "/.well-known/icv-verify.txt";
export const VALUE_PREFIX = "icv-verify=";

/** The spec's verification_method of each domain channel. */
export const DOMAIN_METHODS: Record<string, string> = { dns: "manual_dns", http: "http_file", email: "email", auto: "auto" };
export const domainMethodOf = (channel: string): string => DOMAIN_METHODS[channel] ?? channel;

/**
 * The proof method of a passed check: the DNS record (dns; auto when /verify re-checks it by DNS
 * after the create's provider chain), the HTTP file, or the record the provider's API wrote.
 */
export const checkProofMethod = (channel: string, viaProvider = false): ProofMethod =>
  viaProvider ? "dns_provider" : channel === "http" ? "http_file" : "dns_txt";

export interface DomainPublication {
  dnsRecord: { type: "TXT"; name: string; value: string };
  httpFile: { path: string; content: string };
}

/** What the user publishes for a domain verification whose record value is `value`. */
export const domainPublication = (domain: string, value: string): DomainPublication => ({
  dnsRecord: { type: "TXT", name: `${RECORD_LABEL}.${domain}`, value },
  httpFile: { path: FILE_PATH, content: value },
});
