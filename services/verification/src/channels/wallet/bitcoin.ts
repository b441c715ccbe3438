/** A Bitcoin wallet: a base58check (P2PKH, P2SH) or bech32/bech32m (segwit) address, signing a plain statement (BIP-322 or legacy). */
import { createHash } from "node:crypto";
import { bech32, bech32m } from "@scure/base";
import { checkRaw, invalid, same, type NormalizedIdentifier } from "../channel.ts";
import { refused, takes } from "../shared/options.ts";
import { decodeBase58 } from "./base58.ts";
import { plainMessage, walletChannel } from "./wallet-channel.ts";

// Version bytes: P2PKH and P2SH on mainnet, then on testnet.
const BASE58CHECK_VERSIONS = new Set([0x00, 0x05, 0x6f, 0xc4]);
const SEGWIT_HRPS = new Set(["bc", "tb"]);

function doubleSha256(data: Uint8Array): Buffer {
  return createHash("sha256").update(createHash("sha256").update(data).digest()).digest();
}

function normalizeBitcoin(raw: string): NormalizedIdentifier {
  const input = checkRaw(raw);
  const lower = input.toLowerCase();
  // Anything with a segwit-looking prefix (regtest `bcrt1` included, to reject it clearly) is bech32.
  if (/^(?:bc|tb|bcrt)1/.test(lower)) return same(normalizeSegwit(input, lower));
  return same(normalizeBase58Check(input));
}

function normalizeBase58Check(input: string): string {
  const bytes = decodeBase58(input);
  if (bytes?.length !== 25) invalid("bitcoin address is not a valid base58check or bech32 address");
  if (!BASE58CHECK_VERSIONS.has(bytes[0])) invalid("bitcoin address has an unknown version byte");
  const checksum = doubleSha256(bytes.subarray(0, 21)).subarray(0, 4);
  if (!checksum.equals(bytes.subarray(21))) invalid("bitcoin address has an invalid checksum");
  return input;
}

function normalizeSegwit(input: string, lower: string): string {
  if (input !== lower && input !== input.toUpperCase()) invalid("bitcoin bech32 address must not mix upper and lower case");
  const asBech32 = bech32.decodeUnsafe(lower);
  const asBech32m = asBech32 ? undefined : bech32m.decodeUnsafe(lower);
  const decoded = asBech32 || asBech32m;
  if (!decoded) invalid("bitcoin bech32 address has an invalid checksum or characters");
  if (!SEGWIT_HRPS.has(decoded.prefix)) invalid("bitcoin bech32 address must start with bc1 or tb1");
  if (decoded.words.length === 0) invalid("bitcoin bech32 address has no witness program");
  const version = decoded.words[0];
  const program = bech32.fromWordsUnsafe(decoded.words.slice(1));
  if (!program) invalid("bitcoin bech32 address has an invalid witness program encoding");
  if (version > 16) invalid("bitcoin bech32 address has an invalid witness version");
  if (version === 0) {
    if (!asBech32) invalid("bitcoin segwit v0 address must use bech32, not bech32m");
    if (program.length !== 20 && program.length !== 32) invalid("bitcoin segwit v0 program must be 20 or 32 bytes");
  } else {
    if (!asBech32m) invalid("bitcoin segwit v1+ address must use bech32m, not bech32");
    if (program.length < 2 || program.length > 40) invalid("bitcoin segwit program must be 2-40 bytes");
  }
  return lower;
}

export const bitcoin = walletChannel({
  channel: "bitcoin",
  name: "Bitcoin",
  normalize: normalizeBitcoin,
  message: plainMessage("bitcoin"),
  options: takes({ chain_id: refused("chain_id", "chain_id is only for ethereum wallets") }),
});
