/** A Solana wallet: a base58 ed25519 public key signing a plain statement. */
import { checkRaw, invalid, same, type NormalizedIdentifier } from "../channel.ts";
import { refused, takes } from "../shared/options.ts";
import { BASE58_CHARS, decodeBase58 } from "./base58.ts";
import { plainMessage, walletChannel } from "./wallet-channel.ts";

function normalizeSolana(raw: string): NormalizedIdentifier {
  const input = checkRaw(raw);
  if (input.length < 32 || input.length > 44 || !BASE58_CHARS.test(input)) {
    invalid("solana address must be 32-44 base58 characters");
  }
  const bytes = decodeBase58(input);
  if (bytes?.length !== 32) invalid("solana address must decode to a 32-byte public key");
  return same(input);
}

export const solana = walletChannel({
  channel: "solana",
  name: "Solana",
  normalize: normalizeSolana,
  message: plainMessage("solana"),
  options: takes({ chain_id: refused("chain_id", "chain_id is only for ethereum wallets") }),
});
