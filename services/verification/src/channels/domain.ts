/** Domains: a DNS TXT record, a file over HTTP, a record published through the DNS provider's API, or a code to an admin address. */
import { CHANNELS_BY_TYPE, AppError, type ProofMethod } from "@icv/platform";
import { generateCode, publicToken } from "./shared/secrets.ts";
import { MIN, invalid, notBySubmit, need, same, type Channel, type CreateOptions } from "./channel.ts";
import { checkCode } from "./shared/code.ts";
import { maskEmail, maskGeneric } from "./shared/mask.ts";
import { asciiHostname } from "./shared/names.ts";

/** DECISIONS.md "Domains": the record, the file and the value both hold. */
export const RECORD_LABEL = "_icv-challenge";
export const FILE_PATH = "/.well-known/icv-verify.txt";
export const VALUE_PREFIX = "icv-verify=";

/** The mailboxes a domain-by-email code may go to (default admin). */
export const EMAIL_PREFIXES = ["admin", "administrator", "webmaster", "hostmaster", "postmaster"] as const;

/** Channel auto: the DNS hosts whose API writes the record, and the credential fields each takes. */
export const DNS_PROVIDER_FIELDS: Record<string, readonly string[]> = {
  cloudflare: ["api_token"],
  digitalocean: ["token"],
  godaddy: ["key", "secret"],
  route53: ["access_key_id", "secret_access_key"],
};
const MAX_CREDENTIAL_LENGTH = 1024;

/** The spec's verification_method of each channel. */
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

const badOption = (field: string, message: string): never => {
  throw new AppError("validation_error", message, { details: [{ field, message, code: "invalid" }] });
};

function checkOptions(channel: string, o: CreateOptions): void {
  if (o.emailPrefix !== undefined) {
    if (channel !== "email") badOption("email_prefix", "email_prefix is only for domain verifications on channel email");
    if (!(EMAIL_PREFIXES as readonly string[]).includes(o.emailPrefix!)) badOption("email_prefix", `email_prefix must be one of ${EMAIL_PREFIXES.join(", ")}`);
  }
  if (channel === "auto" && o.dnsProvider === undefined) badOption("dns_provider", "dns_provider ({name, credentials}) is required on channel auto");
  if (o.dnsProvider === undefined) return;
  if (channel !== "auto") badOption("dns_provider", "dns_provider is only for domain verifications on channel auto");
  const { name, credentials } = o.dnsProvider;
  const fields = Object.hasOwn(DNS_PROVIDER_FIELDS, name) ? DNS_PROVIDER_FIELDS[name] : undefined;
  if (!fields) return badOption("dns_provider.name", `dns_provider.name must be one of ${Object.keys(DNS_PROVIDER_FIELDS).join(", ")}`);
  // only the field names are ever named back, never a value
  const given = Object.keys(credentials ?? {});
  const missing = fields.filter((f) => typeof credentials[f] !== "string" || credentials[f].length === 0);
  const extra = given.filter((f) => !fields.includes(f));
  if (missing.length || extra.length) {
    badOption("dns_provider.credentials", `dns_provider.credentials for ${name} must hold exactly ${fields.join(" and ")}`);
  }
  if (fields.some((f) => credentials[f].length > MAX_CREDENTIAL_LENGTH))
    badOption("dns_provider.credentials", `each credential must be at most ${MAX_CREDENTIAL_LENGTH} characters`);
}

export const domain: Channel = {
  type: "domain",
  channels: CHANNELS_BY_TYPE.domain,
  ttlMs: 24 * 60 * MIN,
  method: (channel) => (channel === "email" ? "code" : "domain_check"),
  // auto takes the provider's credentials in the create body: nothing to configure
  missingProvider: (channel, config) => (channel === "email" ? need(config, "SMTP_URL") : []),
  normalize: (_channel, input) => same(normalizeDomain(input)),
  checkOptions,
  // the page takes no DNS host credentials: auto is for the API only
  startableOnPage: (channel) => channel !== "auto",
  challenge({ channel, identifier, now, emailPrefix }) {
    const expiresAt = new Date(now.getTime() + domain.ttlMs);
    if (channel === "email") {
      const code = generateCode();
      const to = `${emailPrefix ?? "admin"}@${identifier}`;
      const instruction = `We sent a 6-character code to ${to}. Enter it to confirm control of ${identifier}.`;
      return {
        code,
        showCode: false,
        sendTo: to,
        sendOver: "email",
        purpose: `control of ${identifier}`,
        expiresAt,
        instruction,
        domainState: { token: null, emailPrefix: emailPrefix ?? "admin" },
      };
    }
    const token = publicToken();
    const value = `${VALUE_PREFIX}${token}`;
    const domainState = { token, emailPrefix: null };
    const { dnsRecord, httpFile } = domainPublication(identifier, value);
    if (channel === "http") {
      return {
        showCode: false,
        expiresAt,
        message: value,
        domainState,
        instruction: `Serve a file at http://${identifier}${httpFile.path} containing exactly: ${value}`,
      };
    }
    if (channel === "auto") {
      return {
        showCode: false,
        expiresAt,
        message: value,
        domainState,
        instruction: `We publish the TXT record ${dnsRecord.name} through your DNS provider's API, check it and remove it.`,
      };
    }
    return {
      showCode: false,
      expiresAt,
      message: value,
      domainState,
      instruction: `Add a TXT record at ${dnsRecord.name} with the value ${value}`,
    };
  },
  complete: (v, e, ctx) => (v.channel === "email" ? checkCode(v, e, ctx, domain.normalize) : notBySubmit(v, "the DNS/HTTP check")),
  mask: maskGeneric,
  // by email: the code goes to {prefix}@{domain}
  sendsCode: (channel) => channel === "email",
  sentNotice: (_channel, sendTo) => ({ to: maskEmail(sendTo), what: "email" }),
};

const SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;

function normalizeDomain(input: string): string {
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
