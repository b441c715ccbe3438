/** The wallet channel: address normalization (ethereum, solana, bitcoin) and the messages to sign. */
import { describe, it, expect } from "vitest";
import fc from "fast-check";
import { getAddress } from "viem";
import { parseSiweMessage, validateSiweMessage } from "viem/siwe";
import { base58, bech32, bech32m } from "@scure/base";
import { normalizeIdentifier } from "../../src/channels/index.ts";
import { expectInvalid, base58check, bytes, segwit, tamper, BASE58_ALPHABET, BECH32_ALPHABET, hash160, NOW, ETH, challenge } from "./helpers.ts";
import { wallet } from "../../src/channels/wallet.ts";
import { CTX, pending, rejection } from "./helpers.ts";

describe("wallet / ethereum", () => {
  // EIP-55 reference vectors.
  const checksummed = [
    "0x52908400098527886E0F7030069857D2E4169EE7",
    "0x8617E340B3D01FA5F11F306F4090FD50E238070D",
    "0xde709f2102306220921060314715629080e2fb77",
    "0x27b1fdb04752bbc536007a920d24acb045561c26",
    "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
    "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
    "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
    "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
  ];
  it.each(checksummed)("accepts checksummed %s", (addr) => {
    expect(normalizeIdentifier("wallet", "ethereum", addr)).toEqual({ value: addr, canonical: addr.toLowerCase() });
  });

  it.each(checksummed)("accepts the all-lower and all-upper forms of %s and checksums them", (addr) => {
    const lower = `0x${addr.slice(2).toLowerCase()}`;
    const upper = `0x${addr.slice(2).toUpperCase()}`;
    expect(normalizeIdentifier("wallet", "ethereum", lower)).toEqual({ value: addr, canonical: lower });
    expect(normalizeIdentifier("wallet", "ethereum", upper)).toEqual({ value: addr, canonical: lower });
  });

  it("checksums any address as viem's getAddress does, and refuses it with one letter's case flipped", () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 20, maxLength: 20 }), fc.nat(39), (raw, at) => {
        const lower = `0x${Buffer.from(raw).toString("hex")}`;
        const expected = getAddress(lower);
        expect(normalizeIdentifier("wallet", "ethereum", lower)).toEqual({ value: expected, canonical: lower });
        expect(normalizeIdentifier("wallet", "ethereum", expected).value).toBe(expected);
        const c = expected[2 + at];
        const flipped = expected.slice(0, 2 + at) + (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()) + expected.slice(3 + at);
        const hex = flipped.slice(2);
        // a flip that leaves the address all-lower or all-upper carries no checksum: accepted
        if (/[a-f]/.test(c.toLowerCase()) && hex !== hex.toLowerCase() && hex !== hex.toUpperCase()) {
          expect(() => normalizeIdentifier("wallet", "ethereum", flipped)).toThrow(/checksum/);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("trims surrounding spaces", () => {
    expect(normalizeIdentifier("wallet", "ethereum", "  0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed ").value).toBe("0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed");
  });

  const invalid: Array<[string, string]> = [
    ["wrong checksum (one letter case flipped)", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD"],
    ["wrong checksum (another flip)", "0xfb6916095ca1df60bB79Ce92cE3Ea74c37c5d359"],
    ["no 0x prefix", "5aaeb6053f3e94c9b9a09f33669435e7ef1beaed"],
    ["0X prefix", "0X5aaeb6053f3e94c9b9a09f33669435e7ef1beaed"],
    ["39 hex chars", "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beae"],
    ["41 hex chars", "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed0"],
    ["non-hex character", "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beagd"],
    ["ENS name", "vitalik.eth"],
    ["inner space", "0x5aaeb6053f3e94c9b9a09f 33669435e7ef1beaed"],
  ];
  it.each(invalid)("rejects %s", (_name, raw) => {
    expectInvalid("wallet", "ethereum", raw);
  });
});

// ---------------------------------------------------------------------------------------------
// solana

describe("wallet / solana", () => {
  const generated = base58.encode(bytes(32, 200, 31));
  const withLeadingZero = base58.encode(new Uint8Array([0, ...bytes(31, 5, 3)]));
  const valid = [
    "11111111111111111111111111111111", // system program: 32 zero bytes
    "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
    generated,
    withLeadingZero,
  ];
  it.each(valid)("accepts %s and keeps its case", (addr) => {
    expect(base58.decode(addr)).toHaveLength(32);
    expect(normalizeIdentifier("wallet", "solana", addr)).toEqual({ value: addr, canonical: addr });
  });

  const invalid: Array<[string, string]> = [
    ["31 bytes", base58.encode(bytes(31, 200, 31))],
    ["33 bytes", base58.encode(bytes(33, 200, 31))],
    ["64 bytes", base58.encode(bytes(64, 9, 5))],
    ["character 0", `0${generated.slice(1)}`],
    ["character O", `O${generated.slice(1)}`],
    ["character I", `I${generated.slice(1)}`],
    ["character l", `l${generated.slice(1)}`],
    ["ethereum address", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"],
    ["too short", "1111"],
  ];
  it.each(invalid)("rejects %s", (_name, raw) => {
    expectInvalid("wallet", "solana", raw);
  });
});

// ---------------------------------------------------------------------------------------------
// bitcoin

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
    expect(normalizeIdentifier("wallet", "bitcoin", raw)).toEqual({ value: expected, canonical: expected });
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

// ---------------------------------------------------------------------------------------------
// social

describe("wallet messages", () => {
  it("ethereum: an EIP-4361 message (host line, address line, Nonce ≥ 8 alphanumerics, Issued At)", () => {
    const c = challenge("wallet", "ethereum", ETH);
    const lines = c.message!.split("\n");
    expect(lines[0]).toBe("verify.example.com wants you to sign in with your Ethereum account:");
    expect(lines[1]).toBe(ETH);
    expect(lines[2]).toBe("");
    expect(c.message).toMatch(/\nNonce: [A-Za-z0-9]{8,}\n/);
    expect(lines).toContain(`Issued At: ${NOW.toISOString()}`);
    expect(lines).toContain("URI: https://verify.example.com");
    expect(lines).toContain("Version: 1");
    expect(c.code).toBeUndefined();
    expect(c.instruction).toContain(ETH);
  });

  it("ethereum: viem's EIP-4361 parser reads every field back, and it validates for its domain and time", () => {
    const c = challenge("wallet", "ethereum", ETH);
    const m = parseSiweMessage(c.message!);
    expect(m).toMatchObject({ domain: "verify.example.com", address: ETH, uri: "https://verify.example.com", version: "1", chainId: 1 });
    expect(m.nonce).toMatch(/^[A-Za-z0-9]{8,}$/);
    expect(m.issuedAt).toEqual(NOW);
    expect(m.expirationTime).toEqual(new Date(NOW.getTime() + 10 * 60_000));
    expect(validateSiweMessage({ message: m, domain: "verify.example.com", address: ETH, time: new Date(NOW.getTime() + 60_000) })).toBe(true);
    expect(validateSiweMessage({ message: m, domain: "verify.example.com", time: new Date(NOW.getTime() + 11 * 60_000) })).toBe(false);
  });

  it("ethereum: the message names the chain of the create body's chain_id (default 1); other channels refuse chain_id", () => {
    expect(wallet.chainId!("ethereum", undefined)).toBe(1);
    expect(wallet.chainId!("ethereum", 8453)).toBe(8453);
    const base = wallet.challenge({
      id: "ver_x",
      type: "wallet",
      channel: "ethereum",
      identifier: ETH,
      env: "test",
      now: NOW,
      config: CTX.config,
      chainId: 8453,
    });
    expect(parseSiweMessage(base.message!).chainId).toBe(8453);
    expect(base.message).toContain("\nChain ID: 8453\n");
    for (const bad of [0, -1, 1.5, Number.MAX_SAFE_INTEGER + 2]) expect(() => wallet.chainId!("ethereum", bad), String(bad)).toThrow(/chain_id/);
    expect(() => wallet.chainId!("bitcoin", 1)).toThrow(/only for ethereum/);
    expect(wallet.chainId!("solana", undefined)).toBeUndefined();
  });

  it("a new nonce for every message", () => {
    const a = parseSiweMessage(challenge("wallet", "ethereum", ETH).message!).nonce;
    const b = parseSiweMessage(challenge("wallet", "ethereum", ETH).message!).nonce;
    expect(a).not.toBe(b);
  });

  it("solana and bitcoin: a signed statement naming the address, with a nonce", () => {
    const sol = challenge("wallet", "solana", "7EcDhSYGxXyscszYEp35KHN8vvw3svAuLKTzXwCFLtV");
    expect(sol.message!.split("\n")[1]).toBe("7EcDhSYGxXyscszYEp35KHN8vvw3svAuLKTzXwCFLtV");
    expect(sol.message).toMatch(/\nNonce: [A-Za-z0-9]{16}\n/);
    expect(sol.message).toContain(`Issued At: ${NOW.toISOString()}`);
  });
});

describe("wallet evidence (complete)", () => {
  const v = pending({ type: "wallet", channel: "ethereum", identifier: ETH, canonical: ETH.toLowerCase(), message: "hello" });

  it("a signature is required", async () => {
    expect(await rejection(() => wallet.complete(v, {}, CTX))).toBe("validation_error");
  });

  it("a signature that does not verify is invalid_signature", async () => {
    expect(await wallet.complete(v, { signature: `0x${"11".repeat(65)}` }, CTX)).toEqual({
      ok: false,
      failure: ["invalid_signature", "the signature does not verify"],
    });
  });
});
