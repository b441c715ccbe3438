/** What the domain channels share: the domain name's normal form. */
import { describe, it, expect } from "vitest";
import { expectInvalid, normalize } from "../helpers.ts";

describe("domain names", () => {
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
    expect(normalize("domain", "dns", raw)).toEqual({ value: expected, canonical: expected });
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

describe("every domain channel", () => {
  it("normalizes alike", () => {
    for (const channel of ["dns", "http", "email", "auto"]) expect(normalize("domain", channel, "https://WWW.Example.COM/").value).toBe("example.com");
  });
});
