/** domain/dns: a TXT record at _icv-challenge.{domain}, checked by the domain service. */
import { describe, it, expect } from "vitest";
import { dns } from "../../../src/channels/domain/dns.ts";
import { challenge, options, takenOptions } from "../helpers.ts";
import { checkedCases } from "./checked-cases.ts";

describe("domain/dns", () => {
  it("says where the value goes", () => {
    const c = challenge("domain", "dns", "example.com");
    expect(c.instruction).toContain("_icv-challenge.example.com");
    expect(c.instruction).toContain(c.message!);
  });

  it("takes no create option: dns_provider is only for channel auto", () => {
    expect(takenOptions("domain", "dns")).toEqual([]);
    expect(options("domain", "dns", { dns_provider: { name: "cloudflare", credentials: { api_token: "t" } } })).toEqual({
      refused: "validation_error",
      message: "dns_provider is only for domain verifications on channel auto",
      details: [{ field: "dns_provider", message: "dns_provider is only for domain verifications on channel auto", code: "invalid" }],
    });
  });

  it("the page can start it", () => {
    expect(dns.form).toEqual({ name: "DNS record", deliveries: [], step: "domain_check", fields: [], publishes: "dns_record" });
  });

  checkedCases(dns);
});
