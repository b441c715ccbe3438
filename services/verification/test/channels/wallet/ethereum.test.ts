/** wallet/ethereum: EIP-55 addresses, the EIP-4361 message on the chain of chain_id, and the signature evidence. */
import { describe, it, expect } from "vitest";
import { getAddress } from "viem";
import fc from "fast-check";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { parseSiweMessage, validateSiweMessage } from "viem/siwe";
import { ethereum } from "../../../src/channels/wallet/ethereum.ts";
import { challenge, CTX, ETH, expectInvalid, normalize, NOW, options, pending, rejection, takenOptions } from "../helpers.ts";

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
    expect(normalize("wallet", "ethereum", addr)).toEqual({ value: addr, canonical: addr.toLowerCase() });
  });

  it.each(checksummed)("accepts the all-lower and all-upper forms of %s and checksums them", (addr) => {
    const lower = `0x${addr.slice(2).toLowerCase()}`;
    const upper = `0x${addr.slice(2).toUpperCase()}`;
    expect(normalize("wallet", "ethereum", lower)).toEqual({ value: addr, canonical: lower });
    expect(normalize("wallet", "ethereum", upper)).toEqual({ value: addr, canonical: lower });
  });

  it("checksums any address as viem's getAddress does, and refuses it with one letter's case flipped", () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 20, maxLength: 20 }), fc.nat(39), (raw, at) => {
        const lower = `0x${Buffer.from(raw).toString("hex")}`;
        const expected = getAddress(lower);
        expect(normalize("wallet", "ethereum", lower)).toEqual({ value: expected, canonical: lower });
        expect(normalize("wallet", "ethereum", expected).value).toBe(expected);
        const c = expected[2 + at];
        const flipped = expected.slice(0, 2 + at) + (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()) + expected.slice(3 + at);
        const hex = flipped.slice(2);
        // a flip that leaves the address all-lower or all-upper carries no checksum: accepted
        if (/[a-f]/.test(c.toLowerCase()) && hex !== hex.toLowerCase() && hex !== hex.toUpperCase()) {
          expect(() => normalize("wallet", "ethereum", flipped)).toThrow(/checksum/);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("trims surrounding spaces", () => {
    expect(normalize("wallet", "ethereum", "  0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed ").value).toBe("0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed");
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

describe("wallet/ethereum challenge", () => {
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

  it("a new nonce for every message", () => {
    const a = parseSiweMessage(challenge("wallet", "ethereum", ETH).message!).nonce;
    const b = parseSiweMessage(challenge("wallet", "ethereum", ETH).message!).nonce;
    expect(a).not.toBe(b);
  });

  it("ethereum: the message names the chain of the create body's chain_id (default 1); other channels refuse chain_id", () => {
    expect(options("wallet", "ethereum", {})).toEqual(expect.objectContaining({ chain_id: 1 }));
    expect(options("wallet", "ethereum", { chain_id: 8453 })).toEqual(expect.objectContaining({ chain_id: 8453 }));
    const base = challenge("wallet", "ethereum", ETH, { options: { chain_id: 8453 } });
    expect(parseSiweMessage(base.message!).chainId).toBe(8453);
    expect(base.message).toContain("\nChain ID: 8453\n");
    for (const bad of [0, -1, 1.5, Number.MAX_SAFE_INTEGER + 2])
      expect(options("wallet", "ethereum", { chain_id: bad }), String(bad)).toMatchObject({
        refused: "validation_error",
        message: expect.stringMatching(/chain_id/),
      });
    expect(options("wallet", "bitcoin", { chain_id: 1 })).toMatchObject({ refused: "validation_error", message: expect.stringMatching(/only for ethereum/) });
    expect(options("wallet", "solana", {})).not.toHaveProperty("refused");
    expect((options("wallet", "solana", {}) as { chain_id?: number }).chain_id).toBeUndefined();
  });
});

describe("wallet evidence (complete)", () => {
  const v = pending({ type: "wallet", channel: "ethereum", identifier: ETH, canonical: ETH.toLowerCase(), message: "hello" });

  it("a signature is required", async () => {
    expect(await rejection(() => ethereum.complete(v, {}, CTX))).toBe("validation_error");
  });

  it("a signature that does not verify is invalid_signature", async () => {
    expect(await ethereum.complete(v, { signature: `0x${"11".repeat(65)}` }, CTX)).toEqual({
      ok: false,
      failure: ["invalid_signature", "the signature does not verify"],
    });
  });
});

describe("wallet/ethereum options and form", () => {
  it("takes chain_id only", () => {
    expect(takenOptions("wallet", "ethereum")).toEqual(["chain_id"]);
    expect(options("wallet", "ethereum", { delivery: "inbound" })).toMatchObject({
      refused: "validation_error",
      details: [{ field: "delivery", message: "phone only", code: "invalid" }],
    });
  });

  it("is completed by a signature, which the page may ask a browser wallet for", () => {
    expect(ethereum.method).toBe("signature");
    expect(ethereum.form).toMatchObject({ step: "sign", browserWallet: "eip1193", fields: [{ name: "signature", input: "textarea" }] });
  });
});

describe("wallet/ethereum evidence from the wallet itself", () => {
  it("the owner's signature of the challenge message proves signature (also sent as code, as the reference SDKs do)", async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const message = challenge("wallet", "ethereum", account.address).message!;
    const v = pending({ type: "wallet", channel: "ethereum", identifier: account.address, canonical: account.address.toLowerCase(), message });
    const signature = await account.signMessage({ message });
    expect(await ethereum.complete(v, { signature }, CTX)).toEqual({ ok: true, method: "signature" });
    expect(await ethereum.complete(v, { challengeCode: signature }, CTX)).toEqual({ ok: true, method: "signature" });
    const other = await privateKeyToAccount(generatePrivateKey()).signMessage({ message });
    expect((await ethereum.complete(v, { signature: other }, CTX)).ok).toBe(false);
  });
});
