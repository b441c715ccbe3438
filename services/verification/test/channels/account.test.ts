/** The account channel: account id normalization. */
import { describe, it, expect } from "vitest";
import { normalizeIdentifier } from "../../src/channels/index.ts";
import { expectInvalid } from "./helpers.ts";
import { account, krakenSignature } from "../../src/channels/account.ts";
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
  });

  it("kraken: the account's public id (IIBAN), compared without spaces, shown in groups of four", () => {
    for (const raw of ["AA88 N84G WOAK NMOI", "aa88n84gwoaknmoi", " AA88N84G WOAKNMOI "]) {
      expect(normalizeIdentifier("account", "kraken", raw)).toEqual({ value: "AA88 N84G WOAK NMOI", canonical: "AA88N84GWOAKNMOI" });
    }
    for (const raw of ["trader@example.com", "AA88 N84G", "BB88 N84G WOAK NMOI", "AA88 N84G WOAK NMOI X"]) expectInvalid("account", "kraken", raw);
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
    expect(
      await rejection(() => account.complete(pending({ type: "account", channel: "coinbase", identifier: "johndoe" }), { challengeCode: "K7P2QX" }, CTX)),
    ).toBe("invalid_state");
  });

  it("kraken: api_key and api_secret are both required", async () => {
    expect(account.method("kraken")).toBe("api_key");
    const v = pending({ type: "account", channel: "kraken", identifier: "AA88 N84G WOAK NMOI" });
    expect(await rejection(() => account.complete(v, { apiKey: "k".repeat(56) }, CTX))).toBe("validation_error");
    expect(await rejection(() => account.complete(v, { challengeCode: "K7P2QX" }, CTX))).toBe("validation_error");
  });

  it("kraken: signs as Kraken documents (HMAC-SHA512 of path + SHA-256(nonce + body), keyed by the decoded secret)", () => {
    // Kraken's published example: nonce, body, path, secret and the API-Sign they give
    const secret = "kQH5HW/8p1uGOVjbgWA7FunAmGO8lsSUXNsu3eow76sz84Q18fWxnyRzBHCd3pd5nE9qa99HAZtuZuj6F1huXg==";
    const sign = krakenSignature(
      "/0/private/AddOrder",
      "1616492376594",
      "nonce=1616492376594&ordertype=limit&pair=XBTUSD&price=37500&type=buy&volume=1.25",
      secret,
    );
    expect(sign).toBe("4/dpxb3iT4tp/ZCVEwSnEsLxx0bqyhLpdfOpc6fn7OR8+UClSV5n9E6aSS8MPtnRfp32bAb0nmbRn6H8ndwLUQ==");
  });
});
