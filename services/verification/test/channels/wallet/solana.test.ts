/** wallet/solana: its addresses, the signed statement and the signature evidence. */
import { generateKeyPairSync, sign } from "node:crypto";
import { describe, it, expect } from "vitest";
import { base58 } from "@scure/base";
import { solana } from "../../../src/channels/wallet/solana.ts";
import { bytes, challenge, CTX, expectInvalid, normalize, NOW, options, pending, rejection, takenOptions } from "../helpers.ts";

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
    expect(normalize("wallet", "solana", addr)).toEqual({ value: addr, canonical: addr });
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

const ADDRESS = "7EcDhSYGxXyscszYEp35KHN8vvw3svAuLKTzXwCFLtV";
const BAD_SIGNATURE = base58.encode(new Uint8Array(64).fill(7));

describe("wallet/solana challenge, evidence and options", () => {
  it("a signed statement naming the address, with a nonce and when it was issued", () => {
    const c = challenge("wallet", "solana", ADDRESS);
    expect(c.message!.split("\n")[1]).toBe(ADDRESS);
    expect(c.message).toMatch(/\nNonce: [A-Za-z0-9]{16}\n/);
    expect(c.message).toContain(`Issued At: ${NOW.toISOString()}`);
    expect(c.message!.split("\n")[0]).toBe("verify.example.com asks you to prove control of the solana address:");
    expect(c.code).toBeUndefined();
  });

  it("a signature is required; one that does not verify is invalid_signature", async () => {
    const v = pending({ type: "wallet", channel: "solana", identifier: ADDRESS, message: "hello" });
    expect(await rejection(() => solana.complete(v, {}, CTX))).toBe("validation_error");
    expect(await solana.complete(v, { signature: BAD_SIGNATURE }, CTX)).toEqual({ ok: false, failure: ["invalid_signature", "the signature does not verify"] });
  });

  it("takes no create option: chain_id is only for ethereum", () => {
    expect(takenOptions("wallet", "solana")).toEqual([]);
    expect(options("wallet", "solana", { chain_id: 1 })).toEqual({
      refused: "validation_error",
      message: "chain_id is only for ethereum wallets",
      details: [{ field: "chain_id", message: "chain_id is only for ethereum wallets", code: "invalid" }],
    });
  });

  it("is completed by a signature typed or pasted on the page", () => {
    expect(solana.method).toBe("signature");
    expect(solana.form).toEqual({ name: "Solana", deliveries: [], step: "sign", fields: [{ name: "signature", label: "Signature", input: "textarea" }] });
  });
});

describe("wallet/solana evidence from the wallet itself", () => {
  it("the key's ed25519 signature of the challenge message proves signature; another key's does not", async () => {
    const keyPair = () => {
      const { publicKey, privateKey } = generateKeyPairSync("ed25519");
      const raw = publicKey.export({ format: "der", type: "spki" }).subarray(-32);
      return { address: base58.encode(raw), privateKey };
    };
    const key = keyPair();
    const message = challenge("wallet", "solana", key.address).message!;
    const v = pending({ type: "wallet", channel: "solana", identifier: key.address, message });
    const signature = base58.encode(sign(null, Buffer.from(message), key.privateKey));
    expect(await solana.complete(v, { signature }, CTX)).toEqual({ ok: true, method: "signature" });
    const other = base58.encode(sign(null, Buffer.from(message), keyPair().privateKey));
    expect((await solana.complete(v, { signature: other }, CTX)).ok).toBe(false);
  });
});
