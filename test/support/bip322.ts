/**
 * A BIP-322 signer for tests, as a wallet would sign (built here from the BIP, independently of
 * the service's verifier): the virtual to_spend / to_sign transactions, signed by
 * @scure/btc-signer, the witness base64-encoded.
 */
import { createHash } from "node:crypto";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { NETWORK, RawWitness, Script, TEST_NETWORK, Transaction, p2tr, p2wpkh } from "@scure/btc-signer";

const sha256 = (b: Uint8Array): Buffer => createHash("sha256").update(b).digest();

export type Bip322Kind = "p2wpkh" | "p2tr";

/** The address of `secret` of that kind (taproot: key path only, no script tree). */
export function bip322Address(secret: Uint8Array, kind: Bip322Kind, testnet = false): string {
  return payment(secret, kind, testnet).address!;
}

function payment(secret: Uint8Array, kind: Bip322Kind, testnet: boolean) {
  const net = testnet ? TEST_NETWORK : NETWORK;
  const pub = secp256k1.getPublicKey(secret, true);
  return kind === "p2wpkh" ? p2wpkh(pub, net) : p2tr(pub.subarray(1), undefined, net);
}

/** The to_sign transaction of BIP-322, unsigned, and its to_spend's id. */
export function virtualTransactions(script: Uint8Array, message: string): { toSpendId: string; toSign: Transaction } {
  const tag = sha256(Buffer.from("BIP0322-signed-message"));
  const messageHash = sha256(Buffer.concat([tag, tag, Buffer.from(message, "utf8")]));
  const opts = { version: 0, allowUnknownInputs: true, allowUnknownOutputs: true, disableScriptCheck: true };
  const toSpend = new Transaction(opts);
  toSpend.addOutput({ script, amount: 0n }, true);
  toSpend.addInput({ txid: new Uint8Array(32), index: 0xffffffff, sequence: 0, finalScriptSig: Script.encode(["OP_0", messageHash]) }, true);
  const toSign = new Transaction(opts);
  toSign.addInput({ txid: toSpend.id, index: 0, sequence: 0, witnessUtxo: { script, amount: 0n } });
  toSign.addOutput({ script: Script.encode(["RETURN"]), amount: 0n });
  return { toSpendId: toSpend.id, toSign };
}

/** A BIP-322 simple signature (base64 witness) of `message` by `secret` for its `kind` address. */
export function bip322Sign(secret: Uint8Array, message: string, kind: Bip322Kind, testnet = false): string {
  const pay = payment(secret, kind, testnet);
  const { toSign } = virtualTransactions(pay.script, message);
  if (kind === "p2tr") toSign.updateInput(0, { tapInternalKey: secp256k1.getPublicKey(secret, true).subarray(1) });
  toSign.signIdx(secret, 0);
  toSign.finalizeIdx(0);
  return Buffer.from(RawWitness.encode(toSign.getInput(0).finalScriptWitness!)).toString("base64");
}
