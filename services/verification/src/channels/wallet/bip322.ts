/**
 * BIP-322 "simple" signatures for single-key segwit addresses: P2WPKH (segwit v0, bc1q…) and
 * P2TR key-path (taproot, bc1p…). The signature is the base64 witness of the virtual `to_sign`
 * transaction that spends the virtual `to_spend` output committing to the message
 * (https://github.com/bitcoin/bips/blob/master/bip-0322.mediawiki). Transactions and sighashes
 * come from @scure/btc-signer; ECDSA and Schnorr checks from @noble/curves.
 *
 * Only what a single key can sign is accepted: a P2WPKH witness of exactly [signature, pubkey]
 * signed SIGHASH_ALL, or a P2TR witness of exactly one 64-byte (SIGHASH_DEFAULT) or 65-byte
 * (…01, SIGHASH_ALL) Schnorr signature. Script paths, annexes, other sighash types, high-S or
 * non-DER signatures and uncompressed keys are refused (BIP-322's "inconclusive" counts as no).
 */
import { createHash } from "node:crypto";
import { schnorr, secp256k1 } from "@noble/curves/secp256k1.js";
import { OutScript, RawWitness, Script, Transaction } from "@scure/btc-signer";

export type Bip322Target = { kind: "p2wpkh"; hash: Uint8Array } | { kind: "p2tr"; key: Uint8Array };

const SIGHASH_DEFAULT = 0x00;
const SIGHASH_ALL = 0x01;

const sha256 = (data: Uint8Array): Buffer => createHash("sha256").update(data).digest();
const hash160 = (data: Uint8Array): Buffer => createHash("ripemd160").update(sha256(data)).digest();

/** sha256(sha256(tag) ‖ sha256(tag) ‖ message), tag "BIP0322-signed-message" (BIP-340 tagged hash). */
export function bip322MessageHash(message: string): Buffer {
  const tag = sha256(Buffer.from("BIP0322-signed-message"));
  return sha256(Buffer.concat([tag, tag, Buffer.from(message, "utf8")]));
}

// The virtual transactions are version 0 with made-up inputs; the library's checks for real
// transactions are relaxed for them alone.
const VIRTUAL = { version: 0, allowUnknownInputs: true, allowUnknownOutputs: true, disableScriptCheck: true } as const;

/** `to_sign` of BIP-322 for `message` and the address's output script, unsigned. */
export function bip322ToSign(outputScript: Uint8Array, message: string): Transaction {
  const toSpend = new Transaction(VIRTUAL);
  toSpend.addInput({ txid: new Uint8Array(32), index: 0xffffffff, sequence: 0, finalScriptSig: Script.encode(["OP_0", bip322MessageHash(message)]) }, true);
  toSpend.addOutput({ script: outputScript, amount: 0n }, true);
  const toSign = new Transaction(VIRTUAL);
  toSign.addInput({ txid: toSpend.id, index: 0, sequence: 0, witnessUtxo: { script: outputScript, amount: 0n } });
  toSign.addOutput({ script: Script.encode(["RETURN"]), amount: 0n });
  return toSign;
}

function outputScriptOf(target: Bip322Target): Uint8Array {
  return target.kind === "p2wpkh" ? OutScript.encode({ type: "wpkh", hash: target.hash }) : OutScript.encode({ type: "tr", pubkey: target.key });
}

/** Whether `signature` (base64) is a valid BIP-322 simple signature of `message` for `target`. Never throws. */
export function verifyBip322(target: Bip322Target, message: string, signature: string): boolean {
  try {
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(signature)) return false;
    const raw = Buffer.from(signature, "base64");
    const witness = RawWitness.decode(raw);
    // The witness must be the whole signature: no trailing bytes.
    if (Buffer.compare(Buffer.from(RawWitness.encode(witness)), raw) !== 0) return false;
    const toSign = bip322ToSign(outputScriptOf(target), message);
    return target.kind === "p2wpkh" ? verifyP2wpkh(target.hash, toSign, witness) : verifyP2tr(target.key, toSign, witness);
  } catch {
    return false;
  }
}

function verifyP2wpkh(hash: Uint8Array, toSign: Transaction, witness: Uint8Array[]): boolean {
  if (witness.length !== 2) return false;
  const [sig, pubkey] = witness;
  if (pubkey.length !== 33 || !hash160(pubkey).equals(Buffer.from(hash))) return false;
  if (sig.length < 9 || sig[sig.length - 1] !== SIGHASH_ALL) return false;
  // BIP-143: the script code of P2WPKH is the P2PKH script of the key hash.
  const sighash = toSign.preimageWitnessV0(0, OutScript.encode({ type: "pkh", hash }), SIGHASH_ALL, 0n);
  return secp256k1.verify(sig.subarray(0, -1), sighash, pubkey, { prehash: false, format: "der", lowS: true });
}

function verifyP2tr(key: Uint8Array, toSign: Transaction, witness: Uint8Array[]): boolean {
  // Key path only: one element (a second one would be an annex or a script-path spend).
  if (witness.length !== 1) return false;
  const [sig] = witness;
  let hashType: number;
  if (sig.length === 64) hashType = SIGHASH_DEFAULT;
  else if (sig.length === 65 && sig[64] === SIGHASH_ALL) hashType = SIGHASH_ALL;
  else return false;
  const sighash = toSign.preimageWitnessV1(0, [outputScriptOf({ kind: "p2tr", key })], hashType, [0n]);
  return schnorr.verify(sig.subarray(0, 64), sighash, key);
}
