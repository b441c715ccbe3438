/** Base58 (Bitcoin's alphabet), shared by the solana and bitcoin addresses. */
import { base58 } from "@scure/base";

export const BASE58_CHARS = /^[1-9A-HJ-NP-Za-km-z]+$/;

export function decodeBase58(input: string): Uint8Array | undefined {
  if (!BASE58_CHARS.test(input)) return undefined;
  try {
    return base58.decode(input);
  } catch {
    return undefined;
  }
}
