/** account/coinbase: an email address or account id, confirmed by signing in with Coinbase. */
import { describe, it, expect } from "vitest";
import { coinbase } from "../../../src/channels/account/coinbase.ts";
import { expectInvalid, normalize } from "../helpers.ts";
import { oauthCases } from "../oauth-cases.ts";

describe("account/coinbase identifiers", () => {
  const valid: Array<[string, string]> = [
    ["ACCT-123_abc", "ACCT-123_abc"],
    ["  ABC123  ", "ABC123"],
    ["8f14e45f-ceea-467f-a0e6-2a4f1c6b7e9d", "8f14e45f-ceea-467f-a0e6-2a4f1c6b7e9d"],
    ["User.Name+x@Example.COM", "user.name+x@example.com"],
    ["trader@bücher.de", "trader@xn--bcher-kva.de"],
    ["k".repeat(255), "k".repeat(255)],
    ["a", "a"],
  ];
  it.each(valid)("normalizes %j to %s", (raw, expected) => {
    expect(normalize("account", "coinbase", raw)).toEqual({ value: expected, canonical: expected });
  });

  const invalid: Array<[string, string]> = [
    ["inner space", "has space"],
    ["over 255 characters", "k".repeat(256)],
    ["non-ASCII", "naïve"],
    ["invalid email", "bad@"],
    ["email with two @", "a@b@example.com"],
  ];
  it.each(invalid)("rejects %s", (_name, raw) => {
    expectInvalid("account", "coinbase", raw);
  });
});

describe("account/coinbase", () => {
  it("masks an account given as an email address like one", () => {
    expect(coinbase.mask("user.name@example.com")).toBe("u***e@example.com");
    expect(coinbase.mask("ACCT-123456789")).toBe("ACCT***6789");
  });

  oauthCases(coinbase, "someone@example.com");
});
