/** Domain by DNS: the user adds a TXT record; the domain service checks it. */
import type { Channel } from "../channel.ts";
import { takes } from "../shared/options.ts";
import { checked, checkedChallenge, NOT_AUTO, NOT_EMAIL } from "./domain-channel.ts";

export const dns: Channel = {
  ...checked,
  channel: "dns",
  options: takes({ email_prefix: NOT_EMAIL, dns_provider: NOT_AUTO }),
  form: { name: "DNS record", deliveries: [], step: "domain_check", fields: [], publishes: "dns_record" },
  challenge: ({ identifier, now }) =>
    checkedChallenge(identifier, now, ({ dnsRecord }, value) => `Add a TXT record at ${dnsRecord.name} with the value ${value}`),
};
