/** Domain by HTTP: the user serves a file at the well-known path; the domain service fetches it. */
import type { Channel } from "../channel.ts";
import { takes } from "../shared/options.ts";
import { checked, checkedChallenge, NOT_AUTO, NOT_EMAIL } from "./domain-channel.ts";

export const http: Channel = {
  ...checked,
  channel: "http",
  options: takes({ email_prefix: NOT_EMAIL, dns_provider: NOT_AUTO }),
  form: { name: "HTTP file", deliveries: [], step: "domain_check", fields: [], publishes: "http_file" },
  challenge: ({ identifier, now }) =>
    checkedChallenge(identifier, now, ({ httpFile }, value) => `Serve a file at http://${identifier}${httpFile.path} containing exactly: ${value}`),
};
