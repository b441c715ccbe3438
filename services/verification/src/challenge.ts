/**
 * The challenge secrets live with the channels that make them (channels/shared/secrets.ts); the
 * phone code's lookup index is the service's own.
 */
import { createHmac } from "node:crypto";

export { CODE_ALPHABET, CODE_LENGTH, codeHmac, codeMatches, generateCode, nonce, publicToken } from "./channels/shared/secrets.ts";

/**
 * The index form of a phone code: an HMAC of (channel, code), not bound to the verification, so
 * the verification an inbound message's code belongs to can be found without storing the code.
 */
export function codeLookup(key: string, channel: string, code: string): string {
  return createHmac("sha256", key).update(`lookup:${channel}:${code.toUpperCase()}`).digest("hex");
}
