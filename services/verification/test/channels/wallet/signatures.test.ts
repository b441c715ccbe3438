import { describe, it, expect } from "vitest";
import { createHash, generateKeyPairSync, sign as cryptoSign, type KeyObject } from "node:crypto";
import { base58, bech32, bech32m, createBase58check } from "@scure/base";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { verifyWalletSignature } from "../../../src/channels/wallet/signatures.ts";

// A message shaped like the ones we generate: several lines, a non-ASCII character so that UTF-8
// byte length differs from string length.
function challengeMessage(address: string, nonce = "7f3c9a1e5b2d4c6f"): string {
  return [
    "icv.example wants you to prove that you control this wallet.",
    "",
    `Wallet: ${address}`,
    "Verification: ver_01JABCDEF0123456789XYZ",
    `Nonce: ${nonce}`,
    "Issued At: 2025-03-01T12:00:00.000Z",
    "Expires At: 2025-03-01T12:10:00.000Z",
    "",
    "Signing is free and does not send a transaction — no fees, no approvals.",
  ].join("\n");
}

const sha256 = (data: Uint8Array): Uint8Array => createHash("sha256").update(data).digest();
const hash160 = (data: Uint8Array): Uint8Array => createHash("ripemd160").update(sha256(data)).digest();

function garbageCases(valid: string): string[] {
  return [
    "",
    "   ",
    "0x",
    "not a signature",
    valid.slice(0, valid.length - 4),
    valid.slice(4),
    `${valid}${valid}`,
    valid + "A".repeat(1100),
    // Would be valid after trimming, but the length cap comes first.
    valid + " ".repeat(1100),
    "\u0000".repeat(10),
    "🥵".repeat(30),
  ];
}

// ---------------------------------------------------------------------------------------------
// general

describe("verifyWalletSignature: input handling", () => {
  it("returns false for an unknown channel and for non-string inputs", async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const message = challengeMessage(account.address);
    const signature = await account.signMessage({ message });
    expect(await verifyWalletSignature("ethereum", account.address, message, signature)).toBe(true);
    expect(await verifyWalletSignature("tron" as never, account.address, message, signature)).toBe(false);
    expect(await verifyWalletSignature("ethereum", account.address, message, undefined as never)).toBe(false);
    expect(await verifyWalletSignature("ethereum", account.address, message, { signature } as never)).toBe(false);
    expect(await verifyWalletSignature("ethereum", account.address, null as never, signature)).toBe(false);
    expect(await verifyWalletSignature("ethereum", undefined as never, message, signature)).toBe(false);
  });

  it("refuses very long signatures without decoding them", async () => {
    const huge = "A".repeat(5_000_000);
    const started = performance.now();
    for (const channel of ["ethereum", "solana", "bitcoin"] as const) {
      expect(await verifyWalletSignature(channel, "x", "m", huge)).toBe(false);
    }
    expect(performance.now() - started).toBeLessThan(100);
  });
});

// ---------------------------------------------------------------------------------------------
// ethereum

describe("verifyWalletSignature: ethereum", () => {
  const account = privateKeyToAccount(generatePrivateKey());
  const other = privateKeyToAccount(generatePrivateKey());
  const message = challengeMessage(account.address);

  it("accepts a personal_sign signature by the address, whatever the address case", async () => {
    const signature = await account.signMessage({ message });
    expect(signature).toMatch(/^0x[0-9a-f]{130}$/);
    expect(await verifyWalletSignature("ethereum", account.address, message, signature)).toBe(true);
    expect(await verifyWalletSignature("ethereum", account.address.toLowerCase(), message, signature)).toBe(true);
    expect(await verifyWalletSignature("ethereum", account.address, message, signature.toUpperCase().replace("0X", "0x"))).toBe(true);
    expect(await verifyWalletSignature("ethereum", account.address, message, `  ${signature}\n`)).toBe(true);
  });

  it("accepts recovery byte 0/1 as well as 27/28", async () => {
    const signature = await account.signMessage({ message });
    const v = parseInt(signature.slice(130), 16);
    const yParity = (v - 27).toString(16).padStart(2, "0");
    expect(await verifyWalletSignature("ethereum", account.address, message, signature.slice(0, 130) + yParity)).toBe(true);
  });

  it("rejects a signature over another message", async () => {
    const signature = await account.signMessage({ message: challengeMessage(account.address, "0000000000000000") });
    expect(await verifyWalletSignature("ethereum", account.address, message, signature)).toBe(false);
    const exact = await account.signMessage({ message });
    expect(await verifyWalletSignature("ethereum", account.address, `${message}\n`, exact)).toBe(false);
  });

  it("rejects another key's signature", async () => {
    const signature = await other.signMessage({ message });
    expect(await verifyWalletSignature("ethereum", account.address, message, signature)).toBe(false);
    expect(await verifyWalletSignature("ethereum", other.address, message, signature)).toBe(true);
  });

  it("rejects garbage, truncated, tampered and oversized signatures", async () => {
    const signature = await account.signMessage({ message });
    for (const bad of garbageCases(signature)) {
      expect(await verifyWalletSignature("ethereum", account.address, message, bad), bad.slice(0, 40)).toBe(false);
    }
    // 65 bytes of the right shape that are not a valid signature.
    expect(await verifyWalletSignature("ethereum", account.address, message, `0x${"00".repeat(65)}`)).toBe(false);
    expect(await verifyWalletSignature("ethereum", account.address, message, `0x${"ff".repeat(65)}`)).toBe(false);
    // Invalid recovery byte.
    expect(await verifyWalletSignature("ethereum", account.address, message, `${signature.slice(0, 130)}1d`)).toBe(false);
    // One flipped bit in s.
    const flipped = signature.slice(0, 100) + (signature[100] === "0" ? "1" : "0") + signature.slice(101);
    expect(await verifyWalletSignature("ethereum", account.address, message, flipped)).toBe(false);
    // Missing 0x / base64 of the bytes.
    expect(await verifyWalletSignature("ethereum", account.address, message, signature.slice(2))).toBe(false);
    expect(await verifyWalletSignature("ethereum", account.address, message, Buffer.from(signature.slice(2), "hex").toString("base64"))).toBe(false);
  });

  it("verifies viem's published signMessage vector (anvil account 0, 'hello world')", async () => {
    const address = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
    const signature = "0xa461f509887bd19e312c0c58467ce8ff8e300d3c1a90b608a760c5b80318eaf15fe57c96f9175d6cd4daad4663763baa7e78836e067d0163e9a2ccf2ff753f5b1b";
    expect(await verifyWalletSignature("ethereum", address, "hello world", signature)).toBe(true);
    expect(await verifyWalletSignature("ethereum", address, "hello world!", signature)).toBe(false);
  });
});

// ---------------------------------------------------------------------------------------------
// solana

function solanaKeyPair(): { address: string; privateKey: KeyObject } {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const spki = publicKey.export({ format: "der", type: "spki" });
  return { address: base58.encode(spki.subarray(spki.length - 32)), privateKey };
}

describe("verifyWalletSignature: solana", () => {
  const key = solanaKeyPair();
  const other = solanaKeyPair();
  const message = challengeMessage(key.address);
  const sigBytes = cryptoSign(null, Buffer.from(message, "utf8"), key.privateKey);

  it("accepts an ed25519 signature given in base58 or base64", async () => {
    expect(sigBytes.length).toBe(64);
    expect(await verifyWalletSignature("solana", key.address, message, base58.encode(sigBytes))).toBe(true);
    expect(await verifyWalletSignature("solana", key.address, message, sigBytes.toString("base64"))).toBe(true);
    expect(await verifyWalletSignature("solana", key.address, message, `${base58.encode(sigBytes)}\n`)).toBe(true);
  });

  it("rejects a signature over another message", async () => {
    const sig = cryptoSign(null, Buffer.from(challengeMessage(key.address, "0000000000000000"), "utf8"), key.privateKey);
    expect(await verifyWalletSignature("solana", key.address, message, base58.encode(sig))).toBe(false);
    expect(await verifyWalletSignature("solana", key.address, message.replace("\n", "\r\n"), base58.encode(sigBytes))).toBe(false);
  });

  it("rejects another key's signature", async () => {
    const sig = cryptoSign(null, Buffer.from(message, "utf8"), other.privateKey);
    expect(await verifyWalletSignature("solana", key.address, message, base58.encode(sig))).toBe(false);
    expect(await verifyWalletSignature("solana", key.address, message, sig.toString("base64"))).toBe(false);
    expect(await verifyWalletSignature("solana", other.address, message, base58.encode(sig))).toBe(true);
  });

  it("rejects garbage, truncated, tampered and oversized signatures", async () => {
    for (const valid of [base58.encode(sigBytes), sigBytes.toString("base64")]) {
      for (const bad of garbageCases(valid)) {
        expect(await verifyWalletSignature("solana", key.address, message, bad), bad.slice(0, 40)).toBe(false);
      }
    }
    const tampered = Buffer.from(sigBytes);
    tampered[10] ^= 1;
    expect(await verifyWalletSignature("solana", key.address, message, base58.encode(tampered))).toBe(false);
    expect(await verifyWalletSignature("solana", key.address, message, base58.encode(new Uint8Array(64)))).toBe(false);
    // Hex and unpadded base64 are not accepted encodings.
    expect(await verifyWalletSignature("solana", key.address, message, sigBytes.toString("hex"))).toBe(false);
    expect(await verifyWalletSignature("solana", key.address, message, sigBytes.toString("base64").replace(/=+$/, ""))).toBe(false);
    // 63 and 65 bytes.
    expect(await verifyWalletSignature("solana", key.address, message, base58.encode(sigBytes.subarray(0, 63)))).toBe(false);
    expect(await verifyWalletSignature("solana", key.address, message, base58.encode(Buffer.concat([sigBytes, Buffer.from([0])])))).toBe(false);
  });

  it("rejects a malformed address", async () => {
    expect(await verifyWalletSignature("solana", "0OIl", message, base58.encode(sigBytes))).toBe(false);
    expect(await verifyWalletSignature("solana", base58.encode(new Uint8Array(31).fill(7)), message, base58.encode(sigBytes))).toBe(false);
  });

  it("verifies RFC 8032 Ed25519 test vector 2 (message 0x72 = 'r')", async () => {
    const publicKey = Buffer.from("3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "hex");
    const sig = Buffer.from(
      "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da" + "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
      "hex",
    );
    const address = base58.encode(publicKey);
    expect(await verifyWalletSignature("solana", address, "r", base58.encode(sig))).toBe(true);
    expect(await verifyWalletSignature("solana", address, "r", sig.toString("base64"))).toBe(true);
    expect(await verifyWalletSignature("solana", address, "s", base58.encode(sig))).toBe(false);
  });
});

// ---------------------------------------------------------------------------------------------
// bitcoin: a signer written here from the BIP-137 description, separate from the verifier.

const b58check = createBase58check(sha256);

type BtcKind = "p2pkh-uncompressed" | "p2pkh" | "p2sh-p2wpkh" | "p2wpkh";
const HEADER_OFFSET: Record<BtcKind, number> = { "p2pkh-uncompressed": 0, p2pkh: 4, "p2sh-p2wpkh": 8, p2wpkh: 12 };

function compactSize(n: number): Uint8Array {
  if (n < 253) return Uint8Array.of(n);
  if (n < 0x10000) return Uint8Array.of(253, n & 0xff, n >> 8);
  throw new Error("test messages are short");
}

function signedMessageDigest(message: string): Uint8Array {
  const prefix = new TextEncoder().encode("Bitcoin Signed Message:\n");
  const body = new TextEncoder().encode(message);
  const data = Buffer.concat([compactSize(prefix.length), prefix, compactSize(body.length), body]);
  return sha256(sha256(data));
}

function btcAddress(secret: Uint8Array, kind: BtcKind, testnet = false): string {
  const pub = secp256k1.getPublicKey(secret, kind !== "p2pkh-uncompressed");
  const h = hash160(pub);
  switch (kind) {
    case "p2pkh-uncompressed":
    case "p2pkh":
      return b58check.encode(Uint8Array.of(testnet ? 0x6f : 0x00, ...h));
    case "p2sh-p2wpkh":
      return b58check.encode(Uint8Array.of(testnet ? 0xc4 : 0x05, ...hash160(Uint8Array.of(0x00, 0x14, ...h))));
    case "p2wpkh":
      return bech32.encode(testnet ? "tb" : "bc", [0, ...bech32.toWords(h)]);
  }
}

function btcSign(secret: Uint8Array, message: string, kind: BtcKind): string {
  // "recovered" format = recovery id ‖ r ‖ s; BIP-137 puts 27 + recid + 4·kind in front instead.
  const rec = secp256k1.sign(signedMessageDigest(message), secret, { prehash: false, format: "recovered" });
  const out = Uint8Array.of(27 + rec[0] + HEADER_OFFSET[kind], ...rec.subarray(1));
  return Buffer.from(out).toString("base64");
}

describe("verifyWalletSignature: bitcoin", () => {
  const secret = secp256k1.utils.randomSecretKey();
  const otherSecret = secp256k1.utils.randomSecretKey();
  const kinds: BtcKind[] = ["p2pkh", "p2sh-p2wpkh", "p2wpkh", "p2pkh-uncompressed"];

  it("test helper derives the well-known addresses of private key 1", () => {
    const one = new Uint8Array(32);
    one[31] = 1;
    expect(btcAddress(one, "p2pkh")).toBe("1BgGZ9tcN4rm9KBzDn7KprQz87SZ26SAMH");
    expect(btcAddress(one, "p2pkh-uncompressed")).toBe("1EHNa6Q4Jz2uvNExL497mE43ikXhwF6kZm");
    expect(btcAddress(one, "p2wpkh")).toBe("bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"); // BIP-173 example
  });

  for (const kind of kinds) {
    describe(kind, () => {
      const address = btcAddress(secret, kind);
      const message = challengeMessage(address);
      const signature = btcSign(secret, message, kind);

      it("accepts a valid signature (mainnet and testnet)", async () => {
        expect(signature).toHaveLength(88);
        expect(await verifyWalletSignature("bitcoin", address, message, signature)).toBe(true);
        const testnetAddress = btcAddress(secret, kind, true);
        const testnetMessage = challengeMessage(testnetAddress);
        expect(await verifyWalletSignature("bitcoin", testnetAddress, testnetMessage, btcSign(secret, testnetMessage, kind))).toBe(true);
      });

      it("rejects a signature over another message", async () => {
        const wrong = btcSign(secret, challengeMessage(address, "0000000000000000"), kind);
        expect(await verifyWalletSignature("bitcoin", address, message, wrong)).toBe(false);
        expect(await verifyWalletSignature("bitcoin", address, `${message} `, signature)).toBe(false);
      });

      it("rejects another key's signature", async () => {
        expect(await verifyWalletSignature("bitcoin", address, message, btcSign(otherSecret, message, kind))).toBe(false);
      });

      it("rejects garbage, truncated, tampered and oversized signatures", async () => {
        for (const bad of garbageCases(signature)) {
          expect(await verifyWalletSignature("bitcoin", address, message, bad), bad.slice(0, 40)).toBe(false);
        }
        const raw = Buffer.from(signature, "base64");
        const tampered = Buffer.from(raw);
        tampered[40] ^= 1;
        expect(await verifyWalletSignature("bitcoin", address, message, tampered.toString("base64"))).toBe(false);
        // Header bytes outside 27..42, and r = s = 0.
        for (const header of [0, 26, 43, 255]) {
          expect(await verifyWalletSignature("bitcoin", address, message, Buffer.concat([Buffer.from([header]), raw.subarray(1)]).toString("base64"))).toBe(
            false,
          );
        }
        expect(await verifyWalletSignature("bitcoin", address, message, Buffer.concat([raw.subarray(0, 1), Buffer.alloc(64)]).toString("base64"))).toBe(false);
        // The other recovery id recovers a different key.
        const flippedRecid = Buffer.from(raw);
        flippedRecid[0] ^= 1;
        expect(await verifyWalletSignature("bitcoin", address, message, flippedRecid.toString("base64"))).toBe(false);
        // Right bytes, wrong encodings.
        expect(await verifyWalletSignature("bitcoin", address, message, raw.toString("hex"))).toBe(false);
        expect(await verifyWalletSignature("bitcoin", address, message, signature.replace(/=$/, ""))).toBe(false);
      });
    });
  }

  it("ties the header to the address kind", async () => {
    const message = challengeMessage("several");
    const p2pkh = btcAddress(secret, "p2pkh");
    const p2shP2wpkh = btcAddress(secret, "p2sh-p2wpkh");
    const p2wpkh = btcAddress(secret, "p2wpkh");
    const uncompressed = btcAddress(secret, "p2pkh-uncompressed");
    // Segwit headers do not prove a legacy address, nor each other's.
    expect(await verifyWalletSignature("bitcoin", p2pkh, message, btcSign(secret, message, "p2wpkh"))).toBe(false);
    expect(await verifyWalletSignature("bitcoin", p2pkh, message, btcSign(secret, message, "p2sh-p2wpkh"))).toBe(false);
    expect(await verifyWalletSignature("bitcoin", p2wpkh, message, btcSign(secret, message, "p2sh-p2wpkh"))).toBe(false);
    expect(await verifyWalletSignature("bitcoin", p2shP2wpkh, message, btcSign(secret, message, "p2wpkh"))).toBe(false);
    // Compressed and uncompressed keys have different P2PKH addresses.
    expect(await verifyWalletSignature("bitcoin", p2pkh, message, btcSign(secret, message, "p2pkh-uncompressed"))).toBe(false);
    expect(await verifyWalletSignature("bitcoin", uncompressed, message, btcSign(secret, message, "p2pkh"))).toBe(false);
    expect(await verifyWalletSignature("bitcoin", p2wpkh, message, btcSign(secret, message, "p2pkh-uncompressed"))).toBe(false);
  });

  it("accepts the Electrum convention: a compressed-P2PKH header for segwit addresses", async () => {
    const message = challengeMessage("electrum");
    const sig = btcSign(secret, message, "p2pkh");
    expect(await verifyWalletSignature("bitcoin", btcAddress(secret, "p2wpkh"), message, sig)).toBe(true);
    expect(await verifyWalletSignature("bitcoin", btcAddress(secret, "p2sh-p2wpkh"), message, sig)).toBe(true);
    expect(await verifyWalletSignature("bitcoin", btcAddress(otherSecret, "p2wpkh"), message, sig)).toBe(false);
  });

  it("accepts an upper-case bech32 address", async () => {
    const address = btcAddress(secret, "p2wpkh");
    const message = challengeMessage(address);
    expect(await verifyWalletSignature("bitcoin", address.toUpperCase(), message, btcSign(secret, message, "p2wpkh"))).toBe(true);
  });

  it("handles messages longer than 252 bytes (3-byte length prefix)", async () => {
    const address = btcAddress(secret, "p2wpkh");
    const message = `${challengeMessage(address)}\n${"Ünïcödé ".repeat(40)}`;
    expect(Buffer.byteLength(message, "utf8")).toBeGreaterThan(252);
    expect(await verifyWalletSignature("bitcoin", address, message, btcSign(secret, message, "p2wpkh"))).toBe(true);
  });

  it("refuses a BIP-137 signature for a taproot address (BIP-322 only) and any for P2WSH", async () => {
    const message = challengeMessage("taproot");
    const sig = btcSign(secret, message, "p2pkh");
    const xOnly = secp256k1.getPublicKey(secret, true).subarray(1);
    const taproot = bech32m.encode("bc", [1, ...bech32.toWords(xOnly)]);
    expect(await verifyWalletSignature("bitcoin", taproot, message, sig)).toBe(false);
    const p2wsh = bech32.encode("bc", [0, ...bech32.toWords(sha256(Uint8Array.of(0x51)))]);
    expect(await verifyWalletSignature("bitcoin", p2wsh, message, sig)).toBe(false);
  });

  it("rejects malformed addresses", async () => {
    const message = challengeMessage("bad");
    const sig = btcSign(secret, message, "p2pkh");
    const good = btcAddress(secret, "p2pkh");
    const badChecksum = good.slice(0, -1) + (good.endsWith("1") ? "2" : "1");
    for (const address of ["", "1", badChecksum, "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t5", "xyz"]) {
      expect(await verifyWalletSignature("bitcoin", address, message, sig), address).toBe(false);
    }
  });

  it("verifies Bitcoin Core's signmessagewithprivkey vector (functional test)", async () => {
    const address = "mpLQjfK79b7CCV4VMJWEWAj5Mpx8Up5zxB";
    const signature = "INbVnW4e6PeRmsv2Qgu8NuopvrVjkcxob+sX8OcZG0SALhWybUjzMLPdAsXI46YZGb0KQTRii+wWIQzRpG/U+S0=";
    expect(await verifyWalletSignature("bitcoin", address, "This is just a test message", signature)).toBe(true);
    expect(await verifyWalletSignature("bitcoin", address, "This is just a test message.", signature)).toBe(false);
  });
});
