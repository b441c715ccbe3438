/** account/kraken: the account's IIBAN, confirmed by a read-only API key checked once with Kraken (never stored). */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "@icv/platform";
import { kraken } from "../../../src/channels/account/kraken.ts";
import { CHANNEL_CONFIG } from "../../../src/channels/registry.ts";
import { krakenSignature } from "../../../src/channels/account/kraken-api.ts";
import { bare, challenge, CTX, expectInvalid, normalize, pending, rejection, takenOptions } from "../helpers.ts";

describe("account/kraken", () => {
  it("kraken: the account's public id (IIBAN), compared without spaces, shown in groups of four", () => {
    for (const raw of ["AA88 N84G WOAK NMOI", "aa88n84gwoaknmoi", " AA88N84G WOAKNMOI "]) {
      expect(normalize("account", "kraken", raw)).toEqual({ value: "AA88 N84G WOAK NMOI", canonical: "AA88N84GWOAKNMOI" });
    }
    for (const raw of ["trader@example.com", "AA88 N84G", "BB88 N84G WOAK NMOI", "AA88 N84G WOAK NMOI X"]) expectInvalid("account", "kraken", raw);
  });

  it("no link, an instruction to make a read-only API key; nothing to configure", () => {
    const c = challenge("account", "kraken", "AA88 N84G WOAK NMOI");
    expect(c.deepLink).toBeUndefined();
    expect(c.code).toBeUndefined();
    expect(c.instruction).toContain("read-only API key");
    expect(kraken.missingProvider(bare)).toEqual([]);
    expect(takenOptions("account", "kraken")).toEqual([]);
  });

  it("kraken: api_key and api_secret are both required", async () => {
    expect(kraken.method).toBe("api_key");
    const v = pending({ type: "account", channel: "kraken", identifier: "AA88 N84G WOAK NMOI" });
    expect(await rejection(() => kraken.complete(v, { apiKey: "k".repeat(56) }, CTX))).toBe("validation_error");
    expect(await rejection(() => kraken.complete(v, { challengeCode: "K7P2QX" }, CTX))).toBe("validation_error");
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

  it("the page asks for the key and its secret", () => {
    expect(kraken.form).toMatchObject({
      step: "api_key",
      fields: [
        { name: "api_key", input: "text" },
        { name: "api_secret", input: "password" },
      ],
    });
  });
});

describe("account/kraken against a Kraken stand-in", () => {
  let server: http.Server;
  let permissions = ["query-funds"];
  let iban = "AA88N84GWOAKNMOI";
  let config = CTX.config;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      res.setHeader("content-type", "application/json");
      const signed = typeof req.headers["api-sign"] === "string" && req.headers["api-key"] === KEY;
      res.end(JSON.stringify(signed ? { error: [], result: { iban, permissions } } : { error: ["EAPI:Invalid key"] }));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    config = parseConfig(
      {
        PUBLIC_BASE_URL: "https://verify.example.com",
        ALLOW_PRIVATE_TARGETS: "true",
        KRAKEN_API_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      },
      CHANNEL_CONFIG,
    );
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const KEY = "A".repeat(56);
  const SECRET = Buffer.alloc(64, 3).toString("base64");
  const v = pending({ type: "account", channel: "kraken", identifier: "AA88 N84G WOAK NMOI", canonical: "AA88N84GWOAKNMOI" });

  it("a read-only key of the account proves api_key; the reference SDKs' key-as-code is taken", async () => {
    permissions = ["query-funds"];
    iban = "AA88N84GWOAKNMOI";
    expect(await kraken.complete(v, { apiKey: KEY, apiSecret: SECRET }, { ...CTX, config })).toEqual({ ok: true, method: "api_key" });
    expect(await kraken.complete(v, { challengeCode: KEY, apiSecret: SECRET }, { ...CTX, config })).toEqual({ ok: true, method: "api_key" });
  });

  it("a refused key, or one of another account, is a wrong answer; a key that may trade is refused", async () => {
    expect((await kraken.complete(v, { apiKey: "B".repeat(56), apiSecret: SECRET }, { ...CTX, config })).ok).toBe(false);
    iban = "AA99N84GWOAKNMOI";
    expect(await kraken.complete(v, { apiKey: KEY, apiSecret: SECRET }, { ...CTX, config })).toEqual({
      ok: false,
      failure: ["invalid_code", "the API key belongs to another Kraken account"],
    });
    iban = "AA88N84GWOAKNMOI";
    permissions = ["query-funds", "trade"];
    expect(await rejection(() => kraken.complete(v, { apiKey: KEY, apiSecret: SECRET }, { ...CTX, config }))).toBe("validation_error");
  });
});
