/** The account channel: account id normalization. */
import { describe, it, expect } from "vitest";
import { normalizeIdentifier } from "../../src/channels/index.ts";
import { expectInvalid } from "./helpers.ts";
import { account } from "../../src/channels/account.ts";
import { CTX, pending, rejection } from "./helpers.ts";

describe("account", () => {
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
    expect(normalizeIdentifier("account", "coinbase", raw)).toEqual({ value: expected, canonical: expected });
    expect(normalizeIdentifier("account", "kraken", raw)).toEqual({ value: expected, canonical: expected });
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

// ---------------------------------------------------------------------------------------------
// telegram_bot

describe("account evidence (complete)", () => {
  it("OAuth: completed by signing in, never by a submit", async () => {
    expect(account.method("coinbase")).toBe("oauth");
    expect(await rejection(() => account.complete(pending({ type: "account", channel: "coinbase", identifier: "johndoe" }), { challengeCode: "K7P2QX" }, CTX))).toBe("invalid_state");
  });
});
