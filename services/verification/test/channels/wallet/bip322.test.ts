// BIP-322 simple signatures for P2WPKH and taproot addresses: the BIP's own test vectors (message
// hashes, virtual transaction ids, the "" and "Hello World" signatures), Bitcoin Core's taproot
// vector, then signatures made by @scure/btc-signer as a wallet makes them.
import { describe, expect, it } from "vitest";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { OutScript, Address, NETWORK, RawWitness } from "@scure/btc-signer";
import { verifyWalletSignature } from "../../../src/channels/wallet/signatures.ts";
import { bip322MessageHash, bip322ToSign } from "../../../src/channels/wallet/bip322.ts";
import { bip322Address, bip322Sign, virtualTransactions, type Bip322Kind } from "../../../../../test/support/bip322.ts";

// BIP-322 "Test vectors": private key L3VFeEujGtevx9w18HD1fhRbCH67Az2dpCymeRE1SoPK6XQtaN2k.
const P2WPKH = "bc1q9vza2e8x573nczrlzms0wvx3gsqjx7vavgkx0l";
const EMPTY_SIGS = [
  "AkcwRAIgM2gBAQqvZX15ZiysmKmQpDrG83avLIT492QBzLnQIxYCIBaTpOaD20qRlEylyxFSeEA2ba9YOixpX8z46TSDtS40ASECx/EgAxlkQpQ9hYjgGu6EBCPMVPwVIVJqO4XCsMvViHI=",
  "AkgwRQIhAPkJ1Q4oYS0htvyuSFHLxRQpFAY56b70UvE7Dxazen0ZAiAtZfFz1S6T6I23MWI2lK/pcNTWncuyL8UL+oMdydVgzAEhAsfxIAMZZEKUPYWI4BruhAQjzFT8FSFSajuFwrDL1Yhy",
];
const HELLO_SIGS = [
  "AkcwRAIgZRfIY3p7/DoVTty6YZbWS71bc5Vct9p9Fia83eRmw2QCICK/ENGfwLtptFluMGs2KsqoNSk89pO7F29zJLUx9a/sASECx/EgAxlkQpQ9hYjgGu6EBCPMVPwVIVJqO4XCsMvViHI=",
  "AkgwRQIhAOzyynlqt93lOKJr+wmmxIens//zPzl9tqIOua93wO6MAiBi5n5EyAcPScOjf1lAqIUIQtr3zKNeavYabHyR8eGhowEhAsfxIAMZZEKUPYWI4BruhAQjzFT8FSFSajuFwrDL1Yhy",
];
// Same key, taproot key path, SIGHASH_ALL (Bitcoin Core src/test/util_tests.cpp, BIP-322 vectors).
const P2TR = "bc1ppv609nr0vr25u07u95waq5lucwfm6tde4nydujnu8npg4q75mr5sxq8lt3";
const P2TR_HELLO = "AUHd69PrJQEv+oKTfZ8l+WROBHuy9HKrbFCJu7U1iK2iiEy1vMU5EfMtjc+VSHM7aU0SDbak5IUZRVno2P5mjSafAQ==";
const OTHER_P2WPKH = "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4";
const OTHER_P2TR = "bc1p5d7rjq7g6rdk2yhzks9smlaqtedr4dekq08ge8ztwac72sfr9rusxg3297";

const verify = (address: string, message: string, signature: string) => verifyWalletSignature("bitcoin", address, message, signature);

function flipByte(b64: string, at: number): string {
  const raw = Buffer.from(b64, "base64");
  raw[at] ^= 0x01;
  return raw.toString("base64");
}

describe("BIP-322: the BIP's vectors", () => {
  it("hashes messages with the BIP0322-signed-message tag", () => {
    expect(bip322MessageHash("").toString("hex")).toBe("c90c269c4f8fcbe6880f72a721ddfbf1914268a794cbb21cfafee13770ae19f1");
    expect(bip322MessageHash("Hello World").toString("hex")).toBe("f0eb03b1a75ac6d9847f55c624a99169b5dccba2a31f5b23bea77ba270de0a7a");
  });

  it("builds the to_spend and to_sign transactions of the vectors (service and test signer alike)", () => {
    const script = OutScript.encode(Address(NETWORK).decode(P2WPKH));
    const cases = [
      ["", "c5680aa69bb8d860bf82d4e9cd3504b55dde018de765a91bb566283c545a99a7", "1e9654e951a5ba44c8604c4de6c67fd78a27e81dcadcfe1edf638ba3aaebaed6"],
      ["Hello World", "b79d196740ad5217771c1098fc4a4b51e0535c32236c71f1ea4d61a2d603352b", "88737ae86f2077145f93cc4b153ae9a1cb8d56afa511988c149c5c8c9d93bddf"],
    ];
    for (const [message, toSpend, toSign] of cases) {
      expect(bip322ToSign(script, message).id).toBe(toSign);
      const ours = virtualTransactions(script, message);
      expect([ours.toSpendId, ours.toSign.id]).toEqual([toSpend, toSign]);
    }
  });

  it("accepts the P2WPKH signatures of the empty message and of Hello World", async () => {
    for (const sig of EMPTY_SIGS) expect(await verify(P2WPKH, "", sig)).toBe(true);
    for (const sig of HELLO_SIGS) expect(await verify(P2WPKH, "Hello World", sig)).toBe(true);
  });

  it("accepts the taproot signature of Hello World", async () => {
    expect(await verify(P2TR, "Hello World", P2TR_HELLO)).toBe(true);
  });

  it("rejects a tampered message", async () => {
    for (const sig of HELLO_SIGS) {
      expect(await verify(P2WPKH, "", sig)).toBe(false);
      expect(await verify(P2WPKH, "Hello World.", sig)).toBe(false);
      expect(await verify(P2WPKH, "hello World", sig)).toBe(false);
    }
    for (const sig of EMPTY_SIGS) expect(await verify(P2WPKH, "Hello World", sig)).toBe(false);
    expect(await verify(P2TR, "", P2TR_HELLO)).toBe(false);
    expect(await verify(P2TR, "Hello World ", P2TR_HELLO)).toBe(false);
  });

  it("rejects a wrong address", async () => {
    for (const sig of HELLO_SIGS) {
      expect(await verify(OTHER_P2WPKH, "Hello World", sig)).toBe(false);
      expect(await verify(P2TR, "Hello World", sig)).toBe(false);
    }
    expect(await verify(OTHER_P2TR, "Hello World", P2TR_HELLO)).toBe(false);
    expect(await verify(P2WPKH, "Hello World", P2TR_HELLO)).toBe(false);
  });

  it("rejects a wrong signature: tampered bytes, another message's, truncated, extra bytes, wrong encoding", async () => {
    const sig = HELLO_SIGS[0];
    // Inside r, inside s, the sighash byte, the public key.
    for (const at of [10, 50, 73, 80]) expect(await verify(P2WPKH, "Hello World", flipByte(sig, at)), `byte ${at}`).toBe(false);
    for (const at of [5, 40, 65]) expect(await verify(P2TR, "Hello World", flipByte(P2TR_HELLO, at)), `byte ${at}`).toBe(false);
    const raw = Buffer.from(sig, "base64");
    expect(await verify(P2WPKH, "Hello World", raw.subarray(0, raw.length - 1).toString("base64"))).toBe(false);
    expect(await verify(P2WPKH, "Hello World", Buffer.concat([raw, Buffer.from([0])]).toString("base64"))).toBe(false);
    expect(await verify(P2WPKH, "Hello World", raw.toString("hex"))).toBe(false);
    expect(await verify(P2WPKH, "Hello World", "")).toBe(false);
    expect(await verify(P2TR, "Hello World", "AA==")).toBe(false);
  });

  it("refuses what a single key did not sign: other sighash types, script-path witnesses, annexes", async () => {
    const [sig, pub] = RawWitness.decode(Buffer.from(HELLO_SIGS[0], "base64"));
    const withHashType = (t: number) => Uint8Array.of(...sig.subarray(0, -1), t);
    const encode = (w: Uint8Array[]) => Buffer.from(RawWitness.encode(w)).toString("base64");
    // SIGHASH_NONE and ALL|ANYONECANPAY with the same r, s: not SIGHASH_ALL.
    expect(await verify(P2WPKH, "Hello World", encode([withHashType(0x02), pub]))).toBe(false);
    expect(await verify(P2WPKH, "Hello World", encode([withHashType(0x81), pub]))).toBe(false);
    expect(await verify(P2WPKH, "Hello World", encode([sig]))).toBe(false);
    expect(await verify(P2WPKH, "Hello World", encode([sig, pub, pub]))).toBe(false);
    const [tr] = RawWitness.decode(Buffer.from(P2TR_HELLO, "base64"));
    expect(await verify(P2TR, "Hello World", encode([tr, Uint8Array.of(0x50, 1, 2)]))).toBe(false);
    expect(await verify(P2TR, "Hello World", encode([Uint8Array.of(...tr.subarray(0, 64), 0x03)]))).toBe(false);
    // A high-S twin of a valid ECDSA signature: valid by consensus, BIP-322 "inconclusive".
    const parsed = secp256k1.Signature.fromBytes(sig.subarray(0, -1), "der");
    const highS = new secp256k1.Signature(parsed.r, secp256k1.Point.CURVE().n - parsed.s);
    expect(await verify(P2WPKH, "Hello World", encode([Uint8Array.of(...highS.toBytes("der"), 0x01), pub]))).toBe(false);
  });
});

describe("BIP-322: wallet-made signatures", () => {
  const secret = secp256k1.utils.randomSecretKey();
  const other = secp256k1.utils.randomSecretKey();
  const message = "icv.example asks you to prove control of the bitcoin address:\nNonce: 1f2e3d4c5b6a7988\nÜnïcödé — ok";

  for (const kind of ["p2wpkh", "p2tr"] as Bip322Kind[]) {
    it(`${kind}: accepts the key's signature on mainnet and testnet, upper-case too; refuses another key's`, async () => {
      const address = bip322Address(secret, kind);
      expect(address.startsWith(kind === "p2wpkh" ? "bc1q" : "bc1p")).toBe(true);
      const sig = bip322Sign(secret, message, kind);
      expect(await verify(address, message, sig)).toBe(true);
      expect(await verify(address.toUpperCase(), message, sig)).toBe(true);
      expect(await verify(address, `${message}\n`, sig)).toBe(false);
      expect(await verify(address, message, bip322Sign(other, message, kind))).toBe(false);
      expect(await verify(bip322Address(other, kind), message, sig)).toBe(false);
      const testnet = bip322Address(secret, kind, true);
      expect(testnet.startsWith("tb1")).toBe(true);
      expect(await verify(testnet, message, bip322Sign(secret, message, kind, true))).toBe(true);
    });
  }

  it("a P2WPKH key's taproot signature does not prove its P2WPKH address, nor the reverse", async () => {
    expect(await verify(bip322Address(secret, "p2wpkh"), message, bip322Sign(secret, message, "p2tr"))).toBe(false);
    expect(await verify(bip322Address(secret, "p2tr"), message, bip322Sign(secret, message, "p2wpkh"))).toBe(false);
  });
});
