/** The domain channel: host name normalization. */
import { describe, it, expect } from "vitest";
import { normalizeIdentifier } from "../../src/channels/index.ts";
import { expectInvalid } from "./helpers.ts";
import { domain } from "../../src/channels/domain.ts";
import { CTX, pending, rejection } from "./helpers.ts";

describe("domain", () => {
  const valid: Array<[string, string]> = [
    ["https://WWW.Example.COM/", "example.com"],
    ["api.example.com", "api.example.com"],
    ["bücher.de", "xn--bcher-kva.de"],
    ["example.com", "example.com"],
    ["EXAMPLE.COM", "example.com"],
    ["www.example.com", "example.com"],
    ["http://example.com", "example.com"],
    ["example.com.", "example.com"],
    ["example.com:8080", "example.com"],
    ["example.com/some/path", "example.com"],
    ["example.com?q=1", "example.com"],
    ["example.com#frag", "example.com"],
    ["http://user:pass@Example.com:443/path?q=1#f", "example.com"],
    ["//example.com/x", "example.com"],
    ["ftp://files.example.org", "files.example.org"],
    ["https://www.bücher.de/katalog", "xn--bcher-kva.de"],
    ["例え.テスト", "xn--r8jz45g.xn--zckzah"],
    ["xn--bcher-kva.de", "xn--bcher-kva.de"],
    ["www.www.example.com", "www.example.com"],
    ["sub.www.example.com", "sub.www.example.com"],
    ["www.com", "www.com"],
    ["a-b.example.co.uk", "a-b.example.co.uk"],
    ["123.example.com", "123.example.com"],
    ["  example.com  ", "example.com"],
    [`${"a".repeat(63)}.com`, `${"a".repeat(63)}.com`],
  ];
  it.each(valid)("normalizes %j to %s", (raw, expected) => {
    expect(normalizeIdentifier("domain", "dns", raw)).toEqual({ value: expected, canonical: expected });
  });

  const over253 = `${[1, 2, 3, 4].map((i) => String(i).repeat(63)).join(".")}.com`; // 259 chars
  const invalid: Array<[string, string]> = [
    ["single label", "localhost"],
    ["single label URL", "https://localhost/"],
    ["IPv4", "1.2.3.4"],
    ["IPv4 URL", "http://1.2.3.4:8080/"],
    ["IPv6", "[::1]"],
    ["IPv6 URL", "http://[2001:db8::1]/"],
    ["numeric TLD", "example.123"],
    ["underscore", "exa_mple.com"],
    ["label starting with hyphen", "-example.com"],
    ["label ending with hyphen", "example-.com"],
    ["empty label", "a..com"],
    ["two trailing dots", "example.com.."],
    ["label over 63", `${"a".repeat(64)}.com`],
    ["total over 253", over253],
    ["space", "exa mple.com"],
    ["non-numeric port", "example.com:http"],
    ["percent-encoding", "%65xample.com"],
    ["email address", "user@example.com"],
    ["scheme only", "https://"],
    ["path only", "/path"],
    ["invalid punycode", "xn--zz.de"],
    ["only www.", "www."],
    ["backslash", "example.com\\evil"],
  ];
  it.each(invalid)("rejects %s", (_name, raw) => {
    expectInvalid("domain", "dns", raw);
  });
});

// ---------------------------------------------------------------------------------------------
// ethereum

describe("domain evidence (complete)", () => {
  it("dns, http and auto are completed by the check, not by a submit", async () => {
    for (const channel of ["dns", "http", "auto"]) {
      expect(await rejection(() => domain.complete(pending({ type: "domain", channel, identifier: "example.com" }), { challengeCode: "K7P2QX" }, CTX))).toBe(
        "invalid_state",
      );
    }
  });

  it("by email: the code mailed to the admin address proves otp", async () => {
    const v = pending({ type: "domain", channel: "email", identifier: "example.com", code: "K7P2QX" });
    expect(await domain.complete(v, { challengeCode: "K7P2QX" }, CTX)).toEqual({ ok: true, method: "otp" });
    expect(
      domain.challenge({
        id: v.id,
        type: "domain",
        channel: "email",
        identifier: "example.com",
        env: "test",
        now: new Date(),
        config: CTX.config,
      }).sendTo,
    ).toBe("admin@example.com");
  });
});

describe("domain challenges and create options", () => {
  const base = {
    id: "ver_01JABCDEFGHJKMNPQRSTVWXYZ0",
    type: "domain" as const,
    identifier: "example.com",
    env: "live" as const,
    now: new Date("2026-02-04T10:00:00.000Z"),
    config: CTX.config,
  };

  it("dns, http and auto publish icv-verify={32 random bytes, base64url}; the record is at _icv-challenge.{domain}", () => {
    const seen = new Set<string>();
    for (const channel of ["dns", "http", "auto"]) {
      const ch = domain.challenge({ ...base, channel });
      expect(ch.message).toMatch(/^icv-verify=[A-Za-z0-9_-]{43}$/);
      expect(ch.domainState!.token).toBe(ch.message!.slice("icv-verify=".length));
      expect(Buffer.from(ch.domainState!.token!, "base64url")).toHaveLength(32);
      expect(ch.code).toBeUndefined();
      expect(ch.expiresAt.getTime() - base.now.getTime()).toBe(24 * 3600_000);
      seen.add(ch.message!);
    }
    expect(seen.size).toBe(3);
    expect(domain.challenge({ ...base, channel: "dns" }).instruction).toContain("_icv-challenge.example.com");
    expect(domain.challenge({ ...base, channel: "http" }).instruction).toContain("http://example.com/.well-known/icv-verify.txt");
  });

  it("by email the code goes to the chosen mailbox, never shown", () => {
    const ch = domain.challenge({ ...base, channel: "email", emailPrefix: "postmaster" });
    expect(ch).toMatchObject({
      sendTo: "postmaster@example.com",
      sendOver: "email",
      showCode: false,
      domainState: { token: null, emailPrefix: "postmaster" },
    });
  });

  const options = (channel: string, o: Parameters<NonNullable<typeof domain.checkOptions>>[1]) => rejectionSync(() => domain.checkOptions!(channel, o));

  it("email_prefix: one of the five mailboxes, on channel email only", () => {
    for (const p of ["admin", "administrator", "webmaster", "hostmaster", "postmaster"]) expect(options("email", { emailPrefix: p })).toBeUndefined();
    expect(options("email", { emailPrefix: "root" })).toBe("validation_error");
    expect(options("email", { emailPrefix: "Admin" })).toBe("validation_error");
    expect(options("dns", { emailPrefix: "admin" })).toBe("validation_error");
  });

  it("dns_provider: required on auto, with exactly the provider's credential fields; a refusal never names a value", () => {
    expect(options("auto", {})).toBe("validation_error");
    expect(options("dns", { dnsProvider: { name: "cloudflare", credentials: { api_token: "t" } } })).toBe("validation_error");
    expect(options("auto", { dnsProvider: { name: "cloudflare", credentials: { api_token: "t" } } })).toBeUndefined();
    expect(options("auto", { dnsProvider: { name: "digitalocean", credentials: { token: "t" } } })).toBeUndefined();
    expect(options("auto", { dnsProvider: { name: "godaddy", credentials: { key: "k", secret: "s" } } })).toBeUndefined();
    expect(options("auto", { dnsProvider: { name: "route53", credentials: { access_key_id: "a", secret_access_key: "s" } } })).toBeUndefined();
    expect(options("auto", { dnsProvider: { name: "__proto__", credentials: {} } })).toBe("validation_error");
    expect(options("auto", { dnsProvider: { name: "godaddy", credentials: { key: "k" } } })).toBe("validation_error");
    expect(options("auto", { dnsProvider: { name: "godaddy", credentials: { key: "k", secret: "" } } })).toBe("validation_error");
    expect(options("auto", { dnsProvider: { name: "cloudflare", credentials: { api_token: "t", token: "u" } } })).toBe("validation_error");
    expect(options("auto", { dnsProvider: { name: "cloudflare", credentials: { api_token: "x".repeat(1025) } } })).toBe("validation_error");
    let message = "";
    try {
      domain.checkOptions!("auto", { dnsProvider: { name: "godaddy", credentials: { key: "very-secret-key-value" } } });
    } catch (e) {
      message = JSON.stringify(e) + String(e);
    }
    expect(message).not.toContain("very-secret-key-value");
  });
});

function rejectionSync(fn: () => void): string | undefined {
  try {
    fn();
  } catch (e) {
    return (e as { code?: string }).code;
  }
  return undefined;
}
