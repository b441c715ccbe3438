/** Domain auto: we publish the TXT record through the DNS host's API with the credentials of the create body, check it and remove it. */
import { z } from "zod";
import type { Channel } from "../channel.ts";
import { takes } from "../shared/options.ts";
import { fail } from "../shared/parse.ts";
import { checked, checkedChallenge, NOT_EMAIL } from "./domain-channel.ts";

/** The DNS hosts whose API writes the record, and the credential fields each takes. */
export const DNS_PROVIDER_FIELDS: Record<string, readonly string[]> = {
  cloudflare: ["api_token"],
  digitalocean: ["token"],
  godaddy: ["key", "secret"],
  route53: ["access_key_id", "secret_access_key"],
};
const MAX_CREDENTIAL_LENGTH = 1024;

type DnsProvider = { name: string; credentials: Record<string, string> };

/** dns_provider: required, a known host, exactly its credential fields; only field names are ever named back, never a value. */
const dnsProvider = z
  .any()
  .optional()
  .transform((given: DnsProvider | undefined, ctx) => {
    const bad = (field: string, message: string) => fail(ctx, message, [{ field, message, code: "invalid" }]);
    if (given === undefined) return bad("dns_provider", "dns_provider ({name, credentials}) is required on channel auto");
    const { name, credentials } = given;
    const fields = Object.hasOwn(DNS_PROVIDER_FIELDS, name) ? DNS_PROVIDER_FIELDS[name] : undefined;
    if (!fields) return bad("dns_provider.name", `dns_provider.name must be one of ${Object.keys(DNS_PROVIDER_FIELDS).join(", ")}`);
    const missing = fields.filter((f) => typeof credentials[f] !== "string" || credentials[f].length === 0);
    const extra = Object.keys(credentials ?? {}).filter((f) => !fields.includes(f));
    if (missing.length || extra.length)
      return bad("dns_provider.credentials", `dns_provider.credentials for ${name} must hold exactly ${fields.join(" and ")}`);
    if (fields.some((f) => credentials[f].length > MAX_CREDENTIAL_LENGTH))
      return bad("dns_provider.credentials", `each credential must be at most ${MAX_CREDENTIAL_LENGTH} characters`);
    return given;
  });

export const auto: Channel = {
  ...checked,
  channel: "auto",
  options: takes({ email_prefix: NOT_EMAIL, dns_provider: dnsProvider }),
  // the page takes no DNS host credentials: auto is for the API only
  form: { name: "Automatic (DNS provider)", deliveries: [], step: "domain_check", fields: [], publishes: "dns_record", startable: false },
  challenge: ({ identifier, now }) =>
    checkedChallenge(
      identifier,
      now,
      ({ dnsRecord }) => `We publish the TXT record ${dnsRecord.name} through your DNS provider's API, check it and remove it.`,
    ),
};
