/** An Ethereum wallet: an EIP-55 address signing an EIP-4361 message on the chain the create names (chain_id, default 1). */
import { keccak_256 } from "@noble/hashes/sha3.js";
import { z } from "zod";
import { checkRaw, invalid, type NormalizedIdentifier } from "../channel.ts";
import { takes } from "../shared/options.ts";
import { fail } from "../shared/parse.ts";
import { ethereumRpc } from "./contract-wallets.ts";
import { siweMessage, walletChannel } from "./wallet-channel.ts";

function normalizeEthereum(raw: string): NormalizedIdentifier {
  const input = checkRaw(raw);
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

/** chain_id: an EIP-155 chain id, default 1. */
const chainId = z
  .any()
  .optional()
  .transform((requested: number | undefined, ctx) => {
    if (requested !== undefined && (!Number.isSafeInteger(requested) || requested < 1)) {
      const message = "chain_id must be a positive integer (an EIP-155 chain id)";
      fail(ctx, message, [{ field: "chain_id", message, code: "invalid" }]);
    }
    return requested ?? 1;
  });

export const ethereum = walletChannel({
  channel: "ethereum",
  name: "Ethereum",
  normalize: normalizeEthereum,
  message: siweMessage,
  options: takes({ chain_id: chainId }),
  browserWallet: "eip1193",
  // smart-contract wallets (ERC-1271, ERC-6492) are checked by the configured node
  checkWith: (config) => ({ ethereumRpc: ethereumRpc(config) }),
});
