/** domain/http: a file at /.well-known/icv-verify.txt, checked by the domain service. */
import { describe, it, expect } from "vitest";
import { http } from "../../../src/channels/domain/http.ts";
import { challenge, options, takenOptions } from "../helpers.ts";
import { checkedCases } from "./checked-cases.ts";

describe("domain/http", () => {
  it("says where the value goes", () => {
    const c = challenge("domain", "http", "example.com");
    expect(c.instruction).toContain("http://example.com/.well-known/icv-verify.txt");
    expect(c.instruction).toContain(c.message!);
  });

  it("takes no create option: dns_provider is only for channel auto", () => {
    expect(takenOptions("domain", "http")).toEqual([]);
    expect(options("domain", "http", { dns_provider: { name: "cloudflare", credentials: { api_token: "t" } } })).toEqual({
      refused: "validation_error",
      message: "dns_provider is only for domain verifications on channel auto",
      details: [{ field: "dns_provider", message: "dns_provider is only for domain verifications on channel auto", code: "invalid" }],
    });
  });

  it("the page can start it", () => {
    expect(http.form).toEqual({ name: "HTTP file", deliveries: [], step: "domain_check", fields: [], publishes: "http_file" });
  });

  checkedCases(http);
});
