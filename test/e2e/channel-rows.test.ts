// Every row of the spec's type/channel table (22 channels): a test key completes each by
// test-verify, and a live key completes the rows whose live path no other e2e file runs with a
// live key: the three wallets (signatures made here, as a wallet makes them) and telegram_bot_token
// (getMe on a local Telegram Bot API stand-in). The other live rows are proven where their local
// stand-ins live: phone in phone-evidence and messaging, email in email-smtp, domain in
// domain-checks and domain-auto, social and account in oauth.
import { generateKeyPairSync, sign as cryptoSign } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { base58 } from "@scure/base";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { decodeJwt } from "jose";
import { api } from "../support/stack.ts";
import { useStack, useTenant } from "../support/use-stack.ts";
import { expectError } from "../support/expect-error.ts";
import { bip322Address, bip322Sign } from "../support/bip322.ts";
import { startTelegramApi, type TelegramApi } from "../support/providers.ts";

const BOT_TOKEN = "7000000123:AAHrowsOfTheTableBotTokenForTests_0123";
const BOT = "Rows_ci_bot";

function solanaKey() {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const spki = publicKey.export({ format: "der", type: "spki" });
  return {
    address: base58.encode(spki.subarray(spki.length - 32)),
    sign: (m: string) => base58.encode(cryptoSign(null, Buffer.from(m, "utf8"), privateKey)),
  };
}

/** The spec's table, row by row, with an identifier each (and the create body's extra fields). */
const ROWS: [type: string, channel: string, identifier: string, extra?: Record<string, unknown>][] = [
  ["phone", "whatsapp", "+37069199101"],
  ["phone", "telegram", "+37069199102"],
  ["phone", "sms", "+37069199103"],
  ["email", "email", "rows@example.com"],
  ["domain", "dns", "rows-dns.example.com"],
  ["domain", "http", "rows-http.example.com"],
  ["domain", "email", "rows-email.example.com"],
  ["domain", "auto", "rows-auto.example.com", { dns_provider: { name: "cloudflare", credentials: { api_token: "never-called-with-a-test-key" } } }],
  ["social", "github", "@octocat"],
  ["social", "google", "jane.doe@example.com"],
  ["social", "facebook", "10158000000000001"],
  ["social", "x", "@jack"],
  ["social", "linkedin", "pat@example.org"],
  ["social", "instagram", "insta.user"],
  ["social", "youtube", "@StandInChannel"],
  ["social", "tiktok", "tok_user"],
  ["wallet", "ethereum", privateKeyToAccount(generatePrivateKey()).address],
  ["wallet", "solana", solanaKey().address],
  ["wallet", "bitcoin", bip322Address(secp256k1.utils.randomSecretKey(), "p2wpkh")],
  ["account", "coinbase", "trader@example.com"],
  ["account", "kraken", "AA88 N84G WOAK NMOI"],
  ["telegram_bot", "telegram_bot_token", `@${BOT}`],
];

let tg: TelegramApi;
const env: Record<string, string> = {};
beforeAll(async () => {
  tg = await startTelegramApi({ token: BOT_TOKEN, botUsername: BOT });
  env.TELEGRAM_API_URL = tg.url;
  env.ALLOW_PRIVATE_TARGETS = "true"; // the stand-in is plain http on loopback
});
afterAll(() => tg?.close());

const stack = useStack(() => env);
const t = useTenant(stack, "Rows");

describe("the spec's type/channel table", () => {
  it("has its 22 rows here, each once", () => {
    expect(new Set(ROWS.map(([type, channel]) => `${type}/${channel}`)).size).toBe(22);
  });
});

describe("test keys: test-verify completes every row", () => {
  it.each(ROWS)("%s / %s", async (type, channel, identifier, extra) => {
    const c = api(stack.url, t.testKey);
    const v = await c.post("/api/v1/verifications", { type, channel, identifier, ...extra });
    expect(v.status, v.text).toBe(201);
    expect(v.body).toMatchObject({ type, channel, status: "pending" });
    const done = await c.post(`/api/v1/verifications/${v.body.id}/test-verify`);
    expect(done.status, done.text).toBe(200);
    expect(done.body).toMatchObject({ id: v.body.id, type, channel, status: "verified", test_mode: true });
    expect(decodeJwt(done.body.proof_token).method).toBe("test");
    const valid = await c.post("/api/v1/proofs/validate", { proof_token: done.body.proof_token });
    expect(valid.body).toMatchObject({ valid: true, verification: { id: v.body.id, type, channel } });
  });
});

describe("live keys without a provider configured", () => {
  const OAUTH = ROWS.filter(([type, channel]) => type === "social" || channel === "coinbase");
  it.each(OAUTH)("%s / %s: no OAUTH_{P}_CLIENT_ID is channel_unavailable, naming the variable, and stores nothing", async (type, channel, identifier) => {
    const c = api(stack.url, t.liveKey);
    const e = expectError(await c.post("/api/v1/verifications", { type, channel, identifier }), 400, "channel_unavailable");
    expect(e.message).toContain(`OAUTH_${channel.toUpperCase()}_CLIENT_ID`);
    expect((await c.get(`/api/v1/verifications?channel=${channel}`)).body.data).toHaveLength(0);
  });
});

describe("live keys: the rows no other e2e file completes live", () => {
  const live = () => api(stack.url, t.liveKey);

  /** Creates the verification, refuses a wrong signature, then completes it with the right one. */
  async function signed(
    channel: string,
    identifier: string,
    sign: (message: string) => string | Promise<string>,
    wrong: (message: string) => string | Promise<string>,
  ) {
    const c = live();
    const v = await c.post("/api/v1/verifications", { type: "wallet", channel, identifier });
    expect(v.status, v.text).toBe(201);
    const message: string = v.body.challenge.message;
    expect(message).toContain(identifier);
    expectError(await c.post(`/api/v1/verifications/${v.body.id}/submit`, { signature: await wrong(message) }), 400, "invalid_signature");
    const ok = await c.post(`/api/v1/verifications/${v.body.id}/submit`, { signature: await sign(message) });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body).toMatchObject({ id: v.body.id, status: "verified", method: "signature" });
    expect(decodeJwt(ok.body.proof.token)).toMatchObject({ method: "signature" });
    const valid = await c.post("/api/v1/proofs/validate", { proof_token: ok.body.proof.token });
    expect(valid.body).toMatchObject({ valid: true, verification: { id: v.body.id, type: "wallet", channel } });
  }

  it("wallet / ethereum: an EIP-191 signature of challenge.message", async () => {
    const wallet = privateKeyToAccount(generatePrivateKey());
    const other = privateKeyToAccount(generatePrivateKey());
    await signed(
      "ethereum",
      wallet.address,
      (message) => wallet.signMessage({ message }),
      (message) => other.signMessage({ message }),
    );
  });

  it("wallet / solana: an ed25519 signature of challenge.message", async () => {
    const key = solanaKey();
    const other = solanaKey();
    await signed("solana", key.address, key.sign, other.sign);
  });

  it("wallet / bitcoin: a BIP-322 signature (taproot) of challenge.message", async () => {
    const secret = secp256k1.utils.randomSecretKey();
    await signed(
      "bitcoin",
      bip322Address(secret, "p2tr"),
      (m) => bip322Sign(secret, m, "p2tr"),
      (m) => bip322Sign(secp256k1.utils.randomSecretKey(), m, "p2tr"),
    );
  });

  it("telegram_bot / telegram_bot_token: the bot's token, checked with getMe; another bot's token fails an attempt", async () => {
    const c = live();
    const v = await c.post("/api/v1/verifications", {
      type: "telegram_bot",
      channel: "telegram_bot_token",
      identifier: `https://t.me/${BOT}`,
    });
    expect(v.status, v.text).toBe(201);
    expect(v.body).toMatchObject({ identifier: `@${BOT}`, status: "pending" });
    const wrong = expectError(
      await c.post(`/api/v1/verifications/${v.body.id}/submit`, { bot_token: "7000000999:AAHanotherBotsTokenThatTelegramRefuses_99" }),
      400,
      "invalid_code",
    );
    expect(wrong.attempts_remaining).toBe(4);
    const ok = await c.post(`/api/v1/verifications/${v.body.id}/submit`, { bot_token: BOT_TOKEN });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body).toMatchObject({ id: v.body.id, status: "verified", method: "bot_token" });
    expect(tg.sent.filter((call) => call.method === "getMe")).toHaveLength(1);
    const got = await c.get(`/api/v1/verifications/${v.body.id}`);
    expect(got.text).not.toContain(BOT_TOKEN);
    expect((await c.post("/api/v1/proofs/validate", { proof_token: ok.body.proof.token })).body).toMatchObject({
      valid: true,
      verification: { type: "telegram_bot", channel: "telegram_bot_token" },
    });
  });
});
