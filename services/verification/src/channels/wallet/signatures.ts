/**
 * Wallet signature verification for `wallet` verifications.
 *
 * `verifyWalletSignature` checks that `signature` is a signature over `message` by the key behind
 * `address` (already normalized by `identifiers.ts`). It never throws: anything malformed,
 * unsupported or not matching is `false`.
 *
 * - ethereum: EIP-191 `personal_sign` by an EOA, a 65-byte `0x` hex signature (viem), checked
 *   locally; with an Ethereum node configured (contract-wallets.ts), smart-contract wallets'
 *   ERC-1271 and ERC-6492 signatures too, on the chain the message names. Only a node that does
 *   not answer throws (service_unavailable): the user did nothing wrong.
 * - solana: ed25519 over the UTF-8 message bytes, signature as base58 or base64 (node:crypto).
 * - bitcoin: BIP-322 simple signatures (bip322.ts) for P2WPKH (bc1q…) and taproot (bc1p…)
 *   addresses, and the legacy "Bitcoin Signed Message" format, a BIP-137 65-byte compact
 *   signature in base64 (public-key recovery with @noble/curves), for P2PKH, P2SH-P2WPKH and
 *   P2WPKH addresses, on mainnet or testnet. P2WSH and other script addresses: not supported.
 */
import { createHash, createPublicKey, verify as cryptoVerify } from "node:crypto";
import { secp256k1 } from "@noble/curves/secp256k1.js";
import { base58, base64, bech32, bech32m } from "@scure/base";
import { AppError } from "@icv/platform";
import { verifyBip322 } from "./bip322.ts";
import type { EthereumRpc } from "./contract-wallets.ts";

export type WalletChannel = "ethereum" | "solana" | "bitcoin";

/** Longer submissions are refused before any decoding. Real signatures are well under 200 chars. */
export const MAX_SIGNATURE_LENGTH = 1024;
/** Contract wallets' signatures (an ERC-6492 one carries the wallet's deployment call) may be longer. */
export const MAX_CONTRACT_SIGNATURE_LENGTH = 8192;

export interface SignatureOptions {
  /** The Ethereum node that checks smart-contract wallet signatures (none: EOA only). */
  ethereumRpc?: EthereumRpc;
}

export async function verifyWalletSignature(
  channel: WalletChannel,
  address: string,
  message: string,
  signature: string,
  opts: SignatureOptions = {},
): Promise<boolean> {
  const cap = channel === "ethereum" && opts.ethereumRpc ? MAX_CONTRACT_SIGNATURE_LENGTH : MAX_SIGNATURE_LENGTH;
  if (typeof signature !== "string" || signature.length > cap) return false;
  if (typeof address !== "string" || typeof message !== "string") return false;
  // Pasted signatures often come with a trailing newline or spaces.
  const sig = signature.trim();
  if (sig.length === 0) return false;
  try {
    switch (channel) {
      case "ethereum":
        return await verifyEthereum(address, message, sig, opts.ethereumRpc);
      case "solana":
        return verifySolana(address, message, sig);
      case "bitcoin":
        return verifyBitcoin(address, message, sig);
      default:
        return false;
    }
  } catch (e) {
    if (e instanceof AppError) throw e; // the node did not answer: not the signature's fault
    return false;
  }
}

const utf8 = (s: string): Buffer => Buffer.from(s, "utf8");

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.from(a).equals(Buffer.from(b));
}

// ---------------------------------------------------------------------------------------------
// ethereum

const ETH_ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const ETH_SIGNATURE = /^0x[0-9a-fA-F]{130}$/;
const ETH_HEX_BYTES = /^0x(?:[0-9a-fA-F]{2})+$/;
const CHAIN_ID_LINE = /^Chain ID: (\d{1,16})$/m;

/** The chain an EIP-4361 message names (its `Chain ID:` line); 1 (mainnet) when it names none. */
export function messageChainId(message: string): number {
  const m = CHAIN_ID_LINE.exec(message);
  return m ? Number(m[1]) : 1;
}

async function verifyEthereum(address: string, message: string, signature: string, rpc: EthereumRpc | undefined): Promise<boolean> {
  if (!ETH_ADDRESS.test(address)) return false;
  const wallet = address.toLowerCase() as `0x${string}`;
  // viem checksums `address` itself and compares the recovered address case-insensitively, so
  // a lower-case address works as well as the EIP-55 form. The message is signed as UTF-8 text.
  // A key's own signature is checked here, with no call to a node, whatever the chain.
  if (ETH_SIGNATURE.test(signature)) {
    const { verifyMessage } = await import("viem"); // loaded on the first use, not at start
    const byKey = await verifyMessage({ address: wallet, message, signature: signature as `0x${string}` }).catch(() => false);
    if (byKey) return true;
  }
  // Anything else may be a smart-contract wallet's, on the chain the signed message names.
  if (!rpc || !ETH_HEX_BYTES.test(signature)) return false;
  if (messageChainId(message) !== (await rpc.chainId())) return false;
  return rpc.verifyMessage(wallet, message, signature as `0x${string}`);
}

// ---------------------------------------------------------------------------------------------
// solana

// DER SubjectPublicKeyInfo header for an Ed25519 key (RFC 8410): the raw 32 bytes follow it.
const ED25519_SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");
const BASE58_CHARS = /^[1-9A-HJ-NP-Za-km-z]+$/;
const BASE64_CHARS = /^[A-Za-z0-9+/]+={0,2}$/;

function decodeSolanaSignature(signature: string): Uint8Array[] {
  const candidates: Uint8Array[] = [];
  // A 64-byte signature is 86-88 chars in base58 and exactly 88 (with "==") in base64. A string
  // can be valid in both alphabets only without padding, so both readings are tried if they fit.
  if (BASE58_CHARS.test(signature) && signature.length <= 90) {
    try {
      const bytes = base58.decode(signature);
      if (bytes.length === 64) candidates.push(bytes);
    } catch {
      // not base58
    }
  }
  if (BASE64_CHARS.test(signature) && signature.length === 88) {
    try {
      const bytes = base64.decode(signature);
      if (bytes.length === 64) candidates.push(bytes);
    } catch {
      // not base64
    }
  }
  return candidates;
}

function verifySolana(address: string, message: string, signature: string): boolean {
  if (!BASE58_CHARS.test(address) || address.length > 44) return false;
  const rawKey = base58.decode(address);
  if (rawKey.length !== 32) return false;
  const candidates = decodeSolanaSignature(signature);
  if (candidates.length === 0) return false;
  const publicKey = createPublicKey({
    key: Buffer.concat([ED25519_SPKI_PREFIX, rawKey]),
    format: "der",
    type: "spki",
  });
  const data = utf8(message);
  return candidates.some((sig) => cryptoVerify(null, data, publicKey, sig));
}

// ---------------------------------------------------------------------------------------------
// bitcoin

const sha256 = (data: Uint8Array): Buffer => createHash("sha256").update(data).digest();
const sha256d = (data: Uint8Array): Buffer => sha256(sha256(data));
const hash160 = (data: Uint8Array): Buffer => createHash("ripemd160").update(sha256(data)).digest();

/** Bitcoin's CompactSize length prefix. */
function varint(n: number): Buffer {
  if (n < 0xfd) return Buffer.from([n]);
  if (n <= 0xffff) {
    const b = Buffer.alloc(3);
    b[0] = 0xfd;
    b.writeUInt16LE(n, 1);
    return b;
  }
  if (n <= 0xffffffff) {
    const b = Buffer.alloc(5);
    b[0] = 0xfe;
    b.writeUInt32LE(n, 1);
    return b;
  }
  throw new Error("message too long");
}

const MAGIC = utf8("Bitcoin Signed Message:\n");

/** sha256d(varint(24) ‖ "Bitcoin Signed Message:\n" ‖ varint(len) ‖ message), as Bitcoin Core. */
function bitcoinMessageHash(message: string): Buffer {
  const msg = utf8(message);
  return sha256d(Buffer.concat([varint(MAGIC.length), MAGIC, varint(msg.length), msg]));
}

type BitcoinAddress =
  | { kind: "p2pkh"; hash: Uint8Array }
  | { kind: "p2sh"; hash: Uint8Array }
  | { kind: "p2wpkh"; hash: Uint8Array }
  | { kind: "p2tr"; key: Uint8Array };

const P2PKH_VERSIONS = new Set([0x00, 0x6f]); // mainnet, testnet
const P2SH_VERSIONS = new Set([0x05, 0xc4]);
const SEGWIT_HRPS = new Set(["bc", "tb"]);

/**
 * The address kinds a signature can prove: with their 20-byte hash, or the taproot output key.
 * `undefined` for anything else, including P2WSH and future witness versions.
 */
function parseBitcoinAddress(address: string): BitcoinAddress | undefined {
  const lower = address.toLowerCase();
  if (/^(?:bc|tb)1/.test(lower)) {
    if (address !== lower && address !== address.toUpperCase()) return undefined;
    // Witness v0 (P2WPKH) is bech32, v1 (taproot) bech32m: each fails the other's checksum.
    const v0 = bech32.decodeUnsafe(lower);
    const decoded = v0 ?? bech32m.decodeUnsafe(lower);
    if (!decoded || !SEGWIT_HRPS.has(decoded.prefix) || decoded.words[0] !== (v0 ? 0 : 1)) return undefined;
    const program = bech32.fromWordsUnsafe(decoded.words.slice(1));
    if (v0 && program?.length === 20) return { kind: "p2wpkh", hash: program };
    if (!v0 && program?.length === 32) return { kind: "p2tr", key: program };
    return undefined;
  }
  if (!BASE58_CHARS.test(address) || address.length > 40) return undefined;
  const bytes = base58.decode(address);
  if (bytes.length !== 25) return undefined;
  if (!bytesEqual(sha256d(bytes.subarray(0, 21)).subarray(0, 4), bytes.subarray(21))) return undefined;
  const hash = bytes.slice(1, 21);
  if (P2PKH_VERSIONS.has(bytes[0])) return { kind: "p2pkh", hash };
  if (P2SH_VERSIONS.has(bytes[0])) return { kind: "p2sh", hash };
  return undefined;
}

/**
 * BIP-137 header byte = 27 + recovery id (0-3) + 4 × kind:
 * 0 = P2PKH with the uncompressed key, 1 = P2PKH compressed, 2 = P2SH-P2WPKH, 3 = P2WPKH.
 */
const HEADER_MIN = 27;
const HEADER_MAX = 42;

function verifyBitcoin(address: string, message: string, signature: string): boolean {
  const target = parseBitcoinAddress(address);
  if (!target) return false;
  // Segwit wallets sign BIP-322 (taproot ones only that way); P2WPKH ones may still use BIP-137.
  if ((target.kind === "p2wpkh" || target.kind === "p2tr") && verifyBip322(target, message, signature)) return true;
  if (target.kind === "p2tr") return false;
  // 65 bytes are 88 base64 chars, the last one "=".
  if (signature.length !== 88 || !BASE64_CHARS.test(signature)) return false;
  const bytes = base64.decode(signature);
  if (bytes.length !== 65) return false;
  const header = bytes[0];
  if (header < HEADER_MIN || header > HEADER_MAX) return false;
  const recovery = (header - HEADER_MIN) & 3;
  const kind = (header - HEADER_MIN) >> 2;

  const sig = secp256k1.Signature.fromBytes(bytes.subarray(1), "compact").addRecoveryBit(recovery);
  const point = sig.recoverPublicKey(bitcoinMessageHash(message));

  if (kind === 0) {
    // Uncompressed keys only ever had legacy P2PKH addresses (segwit requires compressed keys).
    return target.kind === "p2pkh" && bytesEqual(hash160(point.toBytes(false)), target.hash);
  }
  const keyHash = hash160(point.toBytes(true));
  const matches = (k: BitcoinAddress["kind"]): boolean => {
    if (target.kind !== k) return false;
    if (k === "p2sh") {
      // P2SH-P2WPKH: the redeem script is the v0 witness program OP_0 <20-byte key hash>.
      return bytesEqual(hash160(Buffer.concat([Buffer.from([0x00, 0x14]), keyHash])), target.hash);
    }
    return bytesEqual(keyHash, target.hash);
  };
  if (kind === 2) return matches("p2sh");
  if (kind === 3) return matches("p2wpkh");
  // kind 1. Electrum (and Sparrow's "Electrum" format) sign for segwit addresses with the
  // compressed-P2PKH header too, so the key is also accepted for the segwit addresses derived from
  // it. That is no weaker: the recovered key still has to hash to exactly this address.
  return matches("p2pkh") || matches("p2sh") || matches("p2wpkh");
}
