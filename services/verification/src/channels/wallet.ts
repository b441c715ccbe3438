/** Wallets: a signed message (EIP-4361 for ethereum), checked by wallet/signatures.ts. */
import { createHash } from "node:crypto";
import { base58, bech32, bech32m } from "@scure/base";
import { keccak_256 } from "@noble/hashes/sha3.js";
import { CHANNELS_BY_TYPE, AppError, type Config } from "@icv/platform";
import { nonce } from "./shared/secrets.ts";
import { MIN, invalid, same, type Channel, type NormalizedIdentifier } from "./channel.ts";
import { maskGeneric } from "./shared/mask.ts";
import { ethereumRpc } from "./wallet/contract-wallets.ts";
import { verifyWalletSignature, type WalletChannel } from "./wallet/signatures.ts";

export const wallet: Channel = {
  type: "wallet",
  channels: CHANNELS_BY_TYPE.wallet,
  ttlMs: 10 * MIN,
  method: () => "signature",
  missingProvider: (_channel: string, _config: Config) => [],
  normalize: (channel, input) => normalizeWallet(channel, input),
  chainId(channel, requested) {
    const refuse = (message: string) => {
      throw new AppError("validation_error", message, { details: [{ field: "chain_id", message, code: "invalid" }] });
    };
    if (channel !== "ethereum") return requested === undefined ? undefined : refuse("chain_id is only for ethereum wallets");
    if (requested !== undefined && (!Number.isSafeInteger(requested) || requested < 1)) refuse("chain_id must be a positive integer (an EIP-155 chain id)");
    return requested ?? 1;
  },
  challenge({ channel, identifier, now, config, chainId }) {
    const expiresAt = new Date(now.getTime() + wallet.ttlMs);
    const message = walletMessage(channel, identifier, config.publicBaseUrl, now, expiresAt, chainId ?? 1);
    return {
      showCode: false,
      expiresAt,
      message,
      instruction: `Sign the message with the ${channel} wallet ${identifier} and submit the signature.`,
    };
  },
  async complete(v, e, ctx) {
    const signature = e.signature ?? e.challengeCode; // the reference SDKs send the signature as code
    if (!signature) throw new AppError("validation_error", "signature is required for wallet verifications");
    const opts = v.channel === "ethereum" ? { ethereumRpc: ethereumRpc(ctx.config) } : {};
    const ok = await verifyWalletSignature(v.channel as WalletChannel, v.identifier, v.challenge_message ?? "", signature, opts);
    return ok ? { ok: true, method: "signature" } : { ok: false, failure: ["invalid_signature", "the signature does not verify"] };
  },
  mask: maskGeneric,
};

function normalizeWallet(channel: string, input: string): NormalizedIdentifier {
  switch (channel) {
    case "ethereum":
      return normalizeEthereum(input);
    case "solana":
      return same(normalizeSolana(input));
    case "bitcoin":
      return same(normalizeBitcoin(input));
    default:
      throw new AppError("invalid_channel_for_type", "wallet channel must be ethereum, solana or bitcoin");
  }
}

function normalizeEthereum(input: string): NormalizedIdentifier {
  if (!/^0x[0-9a-fA-F]{40}$/.test(input)) invalid("ethereum address must be 0x followed by 40 hex characters");
  // EIP-55: all-lower and all-upper hex carry no checksum and are accepted as they are; mixed case
  // must be the correct checksum
  const hex = input.slice(2);
  const lower = hex.toLowerCase();
  const checksummed = `0x${eip55(lower)}`;
  if (hex !== lower && hex !== hex.toUpperCase() && input !== checksummed) invalid("ethereum address has an invalid EIP-55 checksum");
  return { value: checksummed, canonical: `0x${lower}` };
}

/** EIP-55: a letter of the lower-case hex address is upper-cased where the same nibble of keccak-256(that hex, as ASCII) is 8 or more. */
function eip55(lowerHex: string): string {
  const hash = keccak_256(new TextEncoder().encode(lowerHex));
  let out = "";
  for (let i = 0; i < lowerHex.length; i++) {
    const nibble = (hash[i >> 1] >> (i % 2 ? 0 : 4)) & 0xf;
    out += nibble >= 8 ? lowerHex[i].toUpperCase() : lowerHex[i];
  }
  return out;
}

const BASE58_CHARS = /^[1-9A-HJ-NP-Za-km-z]+$/;

function decodeBase58(input: string): Uint8Array | undefined {
  if (!BASE58_CHARS.test(input)) return undefined;
  try {
    return base58.decode(input);
  } catch {
    return undefined;
  }
}

function normalizeSolana(input: string): string {
  if (input.length < 32 || input.length > 44 || !BASE58_CHARS.test(input)) {
    invalid("solana address must be 32-44 base58 characters");
  }
  const bytes = decodeBase58(input);
  if (bytes?.length !== 32) invalid("solana address must decode to a 32-byte public key");
  return input;
}

// Version bytes: P2PKH and P2SH on mainnet, then on testnet.
const BASE58CHECK_VERSIONS = new Set([0x00, 0x05, 0x6f, 0xc4]);
const SEGWIT_HRPS = new Set(["bc", "tb"]);

function doubleSha256(data: Uint8Array): Buffer {
  return createHash("sha256").update(createHash("sha256").update(data).digest()).digest();
}

function normalizeBitcoin(input: string): string {
  const lower = input.toLowerCase();
  // Anything with a segwit-looking prefix (regtest `bcrt1` included, to reject it clearly) is bech32.
  if (/^(?:bc|tb|bcrt)1/.test(lower)) return normalizeSegwit(input, lower);
  return normalizeBase58Check(input);
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
/** EIP-4361 (Sign-In with Ethereum) for ethereum; a plain signed statement for the others. */
function walletMessage(channel: string, address: string, base: string, now: Date, expires: Date, chainId: number): string {
  const host = new URL(base).host;
  const statement = "Sign this message to prove you control this wallet. It costs nothing and sends no transaction.";
  if (channel === "ethereum") {
    return [
      `${host} wants you to sign in with your Ethereum account:`,
      address,
      "",
      statement,
      "",
      `URI: ${base}`,
      "Version: 1",
      `Chain ID: ${chainId}`,
      `Nonce: ${nonce()}`,
      `Issued At: ${now.toISOString()}`,
      `Expiration Time: ${expires.toISOString()}`,
    ].join("\n");
  }
  return [
    `${host} asks you to prove control of the ${channel} address:`,
    address,
    "",
    statement,
    "",
    `Nonce: ${nonce()}`,
    `Issued At: ${now.toISOString()}`,
  ].join("\n");
}
