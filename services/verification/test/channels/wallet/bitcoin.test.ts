/** wallet/bitcoin: its addresses, the signed statement and the signature evidence. */
import { describe, it, expect } from "vitest";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { bip322Address, bip322Sign } from "../../../../../test/support/bip322.ts";
import { base58, bech32, bech32m } from "@scure/base";
import { bitcoin } from "../../../src/channels/wallet/bitcoin.ts";
import {
  base58check,
  BASE58_ALPHABET,
  BECH32_ALPHABET,
  bytes,
  challenge,
  CTX,
  expectInvalid,
  hash160,
  normalize,
  NOW,
  segwit,
  tamper,
  options,
  pending,
  rejection,
  takenOptions,
} from "../helpers.ts";

describe("wallet / bitcoin", () => {
  const p2pkh = base58check(0x00, hash160);
  const p2sh = base58check(0x05, hash160);
  const testP2pkh = base58check(0x6f, hash160);
  const testP2sh = base58check(0xc4, hash160);
  const p2wpkh = segwit("bc", 0, hash160);
  const p2wsh = segwit("bc", 0, bytes(32, 11, 17));
  const p2tr = segwit("bc", 1, bytes(32, 99, 23));
  const testP2wpkh = segwit("tb", 0, hash160);
  const v16 = segwit("bc", 16, bytes(2));
  const v1Max = segwit("bc", 1, bytes(40));

  it("builds the expected address shapes", () => {
    expect(p2pkh.startsWith("1")).toBe(true);
    expect(p2sh.startsWith("3")).toBe(true);
    expect(testP2pkh[0]).toMatch(/[mn]/);
    expect(testP2sh.startsWith("2")).toBe(true);
    expect(p2wpkh.startsWith("bc1q")).toBe(true);
    expect(p2tr.startsWith("bc1p")).toBe(true);
  });

  const valid: Array<[string, string, string]> = [
    ["genesis P2PKH", "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa"],
    ["built P2PKH", p2pkh, p2pkh],
    ["built P2SH", p2sh, p2sh],
    ["built testnet P2PKH", testP2pkh, testP2pkh],
    ["built testnet P2SH", testP2sh, testP2sh],
    ["built P2WPKH", p2wpkh, p2wpkh],
    ["built P2WSH", p2wsh, p2wsh],
    ["built P2TR", p2tr, p2tr],
    ["built testnet P2WPKH", testP2wpkh, testP2wpkh],
    ["built v16, 2-byte program", v16, v16],
    ["built v1, 40-byte program", v1Max, v1Max],
    ["upper-case P2WPKH (lower-cased)", p2wpkh.toUpperCase(), p2wpkh],
    [
      "BIP-173 vector P2WSH",
      "bc1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3qccfmv3",
      "bc1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3qccfmv3",
    ],
    ["BIP-350 vector P2TR", "bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0", "bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0"],
  ];
  it.each(valid)("accepts %s", (_name, raw, expected) => {
    expect(normalize("wallet", "bitcoin", raw)).toEqual({ value: expected, canonical: expected });
  });

  const mixedCase = p2wpkh.slice(0, 10) + p2wpkh.slice(10).toUpperCase();
  const invalid: Array<[string, string]> = [
    ["tampered P2PKH", tamper(p2pkh, 10, BASE58_ALPHABET)],
    ["tampered P2SH", tamper(p2sh, 20, BASE58_ALPHABET)],
    ["tampered genesis", "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNb"],
    ["P2PKH with case changed", p2pkh.slice(0, 5) + p2pkh.slice(5).toUpperCase()],
    ["unknown version byte", base58check(0x01, hash160)],
    ["litecoin-style version byte", base58check(0x30, hash160)],
    ["21-byte payload", base58check(0x00, bytes(21))],
    ["19-byte payload", base58check(0x00, bytes(19))],
    ["checksum over wrong data", base58.encode(new Uint8Array([0, ...hash160, 1, 2, 3, 4]))],
    ["tampered P2WPKH", tamper(p2wpkh, 15, BECH32_ALPHABET)],
    ["tampered P2TR", tamper(p2tr, 30, BECH32_ALPHABET)],
    ["mixed-case bech32", mixedCase],
    ["v0 encoded with bech32m", segwit("bc", 0, hash160, bech32m)],
    ["v1 encoded with bech32", segwit("bc", 1, bytes(32), bech32)],
    ["v0 with a 21-byte program", segwit("bc", 0, bytes(21))],
    ["v0 with a 33-byte program", segwit("bc", 0, bytes(33))],
    ["v1 with a 1-byte program", segwit("bc", 1, bytes(1))],
    ["v1 with a 41-byte program", segwit("bc", 1, bytes(41))],
    ["witness version 17", bech32m.encode("bc", [17, ...bech32m.toWords(bytes(32))])],
    ["regtest prefix", segwit("bcrt", 0, hash160)],
    ["litecoin prefix", segwit("ltc", 0, hash160)],
    ["bc1 with no data", "bc1"],
    ["non-canonical padding", bech32.encode("bc", [0, ...bech32.toWords(hash160), 1])],
    ["ethereum address", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"],
    ["base58 characters outside the alphabet", "1A1zP1eP5QGefi2DMPTfTL5SLmv7Divf0a"],
  ];
  it.each(invalid)("rejects %s", (_name, raw) => {
    expectInvalid("wallet", "bitcoin", raw);
  });
});

const ADDRESS = segwit("bc", 0, hash160);
const BAD_SIGNATURE = Buffer.alloc(65, 7).toString("base64");

describe("wallet/bitcoin challenge, evidence and options", () => {
  it("a signed statement naming the address, with a nonce and when it was issued", () => {
    const c = challenge("wallet", "bitcoin", ADDRESS);
    expect(c.message!.split("\n")[1]).toBe(ADDRESS);
    expect(c.message).toMatch(/\nNonce: [A-Za-z0-9]{16}\n/);
    expect(c.message).toContain(`Issued At: ${NOW.toISOString()}`);
    expect(c.message!.split("\n")[0]).toBe("verify.example.com asks you to prove control of the bitcoin address:");
    expect(c.code).toBeUndefined();
  });

  it("a signature is required; one that does not verify is invalid_signature", async () => {
    const v = pending({ type: "wallet", channel: "bitcoin", identifier: ADDRESS, message: "hello" });
    expect(await rejection(() => bitcoin.complete(v, {}, CTX))).toBe("validation_error");
    expect(await bitcoin.complete(v, { signature: BAD_SIGNATURE }, CTX)).toEqual({
      ok: false,
      failure: ["invalid_signature", "the signature does not verify"],
    });
  });

  it("takes no create option: chain_id is only for ethereum", () => {
    expect(takenOptions("wallet", "bitcoin")).toEqual([]);
    expect(options("wallet", "bitcoin", { chain_id: 1 })).toEqual({
      refused: "validation_error",
      message: "chain_id is only for ethereum wallets",
      details: [{ field: "chain_id", message: "chain_id is only for ethereum wallets", code: "invalid" }],
    });
  });

  it("is completed by a signature typed or pasted on the page", () => {
    expect(bitcoin.method).toBe("signature");
    expect(bitcoin.form).toEqual({ name: "Bitcoin", deliveries: [], step: "sign", fields: [{ name: "signature", label: "Signature", input: "textarea" }] });
  });
});

describe("wallet/bitcoin evidence from the wallet itself", () => {
  it.each(["p2wpkh", "p2tr"] as const)("a BIP-322 signature of the challenge message by the %s address's key proves signature", async (kind) => {
    const secret = secp256k1.utils.randomSecretKey();
    const address = bip322Address(secret, kind);
    const message = challenge("wallet", "bitcoin", address).message!;
    const v = pending({ type: "wallet", channel: "bitcoin", identifier: address, message });
    expect(await bitcoin.complete(v, { signature: bip322Sign(secret, message, kind) }, CTX)).toEqual({ ok: true, method: "signature" });
    expect((await bitcoin.complete(v, { signature: bip322Sign(secp256k1.utils.randomSecretKey(), message, kind) }, CTX)).ok).toBe(false);
  });
});
