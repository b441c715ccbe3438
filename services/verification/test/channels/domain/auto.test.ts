/** domain/auto: the record published through the DNS host's API with the create body's credentials. */
import { describe, it, expect } from "vitest";
import { auto } from "../../../src/channels/domain/auto.ts";
import { parseWith } from "../../../src/channels/shared/parse.ts";
import { challenge, options, takenOptions } from "../helpers.ts";
import { checkedCases } from "./checked-cases.ts";

const cloudflare = { name: "cloudflare", credentials: { api_token: "t" } };
/** The AppError code a domain channel refuses the options `body` with, or undefined when it takes them. */
const refusal = (channel: string, body: Parameters<typeof options>[2]) => {
  const o = options("domain", channel, body);
  return "refused" in o ? o.refused : undefined;
};

describe("domain/auto", () => {
  it("says the record is published for the user", () => {
    const c = challenge("domain", "auto", "example.com", { options: { dns_provider: cloudflare } });
    expect(c.instruction).toContain("_icv-challenge.example.com");
    expect(c.instruction).toMatch(/through your DNS provider's API/);
  });

  it("dns_provider: required on auto, with exactly the provider's credential fields; a refusal never names a value", () => {
    expect(refusal("auto", {})).toBe("validation_error");
    expect(refusal("dns", { dns_provider: { name: "cloudflare", credentials: { api_token: "t" } } })).toBe("validation_error");
    expect(refusal("auto", { dns_provider: { name: "cloudflare", credentials: { api_token: "t" } } })).toBeUndefined();
    expect(refusal("auto", { dns_provider: { name: "digitalocean", credentials: { token: "t" } } })).toBeUndefined();
    expect(refusal("auto", { dns_provider: { name: "godaddy", credentials: { key: "k", secret: "s" } } })).toBeUndefined();
    expect(refusal("auto", { dns_provider: { name: "route53", credentials: { access_key_id: "a", secret_access_key: "s" } } })).toBeUndefined();
    expect(refusal("auto", { dns_provider: { name: "__proto__", credentials: {} } })).toBe("validation_error");
    expect(refusal("auto", { dns_provider: { name: "godaddy", credentials: { key: "k" } } })).toBe("validation_error");
    expect(refusal("auto", { dns_provider: { name: "godaddy", credentials: { key: "k", secret: "" } } })).toBe("validation_error");
    expect(refusal("auto", { dns_provider: { name: "cloudflare", credentials: { api_token: "t", token: "u" } } })).toBe("validation_error");
    expect(refusal("auto", { dns_provider: { name: "cloudflare", credentials: { api_token: "x".repeat(1025) } } })).toBe("validation_error");
    let message = "";
    try {
      parseWith(auto.options, { dns_provider: { name: "godaddy", credentials: { key: "very-secret-key-value" } } });
    } catch (e) {
      message = JSON.stringify(e) + String(e);
    }
    expect(message).not.toContain("very-secret-key-value");
  });
  it("takes dns_provider only, and requires it", () => {
    expect(takenOptions("domain", "auto")).toEqual(["dns_provider"]);
    expect(options("domain", "auto", {})).toEqual({
      refused: "validation_error",
      message: "dns_provider ({name, credentials}) is required on channel auto",
      details: [{ field: "dns_provider", message: "dns_provider ({name, credentials}) is required on channel auto", code: "invalid" }],
    });
    expect(options("domain", "auto", { dns_provider: cloudflare })).toMatchObject({ dns_provider: cloudflare });
  });

  it("the page cannot start it (it has no inputs for the DNS host's credentials)", () => {
    expect(auto.form).toMatchObject({ step: "domain_check", startable: false });
  });

  checkedCases(auto);
});
