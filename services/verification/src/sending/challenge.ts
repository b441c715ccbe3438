/** The codes a verification stores: their HMAC (channels/shared/codes.ts) and the index form of a phone code. */
import { createHmac } from "node:crypto";

export { CODE_ALPHABET, CODE_LENGTH, codeHmac, codeMatches, generateCode, nonce, publicToken } from "../channels/shared/codes.ts";

/**
 * The index form of a phone code: an HMAC of (channel, code), not bound to the verification, so
 * the verification an inbound message's code belongs to can be found without storing the code.
 */
export function codeLookup(key: string, channel: string, code: string): string {
  return createHmac("sha256", key).update(`lookup:${channel}:${code.toUpperCase()}`).digest("hex");
}
