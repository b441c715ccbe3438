/** Domains: a DNS TXT record, a file over HTTP, a record published through the DNS provider's API, or a code to an admin address. */
import type { Config } from "@icv/platform";
import { generateCode, publicToken } from "../challenge.ts";
import { MIN, invalid, need, notBySubmit, same, type Channel } from "./channel.ts";
import { checkCode } from "./code.ts";
import { maskGeneric } from "./mask.ts";
import { asciiHostname } from "./names.ts";

export const domain: Channel = {
  type: "domain",
  channels: ["dns", "http", "email", "auto"],
  ttlMs: 24 * 60 * MIN,
  method: (channel) => (channel === "email" ? "code" : "domain_check"),
  missingProvider(channel: string, config: Config) {
    if (channel === "email") return need(config, "SMTP_URL");
    if (channel === "auto") return need(config, "DNS_PROVIDER_API");
    return [];
  },
  normalize: (_channel, input) => same(normalizeDomain(input)),
  challenge({ channel, identifier, now }) {
    const expiresAt = new Date(now.getTime() + domain.ttlMs);
    if (channel === "email") {
      const code = generateCode();
      const instruction = `We sent a 6-character code to an administrative address at ${identifier}. Enter it to confirm.`;
      return { code, showCode: false, sendTo: `admin@${identifier}`, sendOver: "email", purpose: `control of ${identifier}`, expiresAt, instruction };
    }
    const value = `icv-verify=${publicToken()}`;
    if (channel === "http") {
      return { showCode: false, expiresAt, message: value, instruction: `Serve a file at http://${identifier}/.well-known/icv-verify.txt containing exactly: ${value}` };
    }
    if (channel === "auto") {
      return { showCode: false, expiresAt, message: value, instruction: `We publish the TXT record through your DNS provider's API, check it and remove it.` };
    }
    return { showCode: false, expiresAt, message: value, instruction: `Add a TXT record at _icv-challenge.${identifier} with the value ${value}` };
  },
  complete: (v, e, ctx) => (v.channel === "email" ? checkCode(v, e, ctx, domain.normalize) : notBySubmit(v, "the DNS/HTTP check")),
  mask: maskGeneric,
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