import { createHash, sign, type KeyObject } from "node:crypto";

/**
 * C2SP signed notes (signed-note) carrying checkpoints (tlog-checkpoint), with an Ed25519 key
 * (algorithm byte 0x01): key id = SHA-256(name ‖ "\n" ‖ 0x01 ‖ public key)[:4], signature line
 * "— name base64(key id ‖ signature)", verifier key "name+hex(key id)+base64(0x01 ‖ public key)".
 */

const ED25519 = 0x01;

export function keyId(name: string, publicKey: Buffer): Buffer {
  return createHash("sha256")
    .update(Buffer.concat([Buffer.from(`${name}\n`), Buffer.from([ED25519]), publicKey]))
    .digest()
    .subarray(0, 4);
}

export const vkey = (name: string, publicKey: Buffer): string =>
  `${name}+${keyId(name, publicKey).toString("hex")}+${Buffer.concat([Buffer.from([ED25519]), publicKey]).toString("base64")}`;

/** The checkpoint body: origin, tree size, base64 root hash, each on its line. */
export const checkpointBody = (origin: string, size: number, root: Buffer): string => `${origin}\n${size}\n${root.toString("base64")}\n`;

/** The body signed by `key` as a note. */
export function signNote(body: string, name: string, publicKey: Buffer, key: KeyObject): string {
  const sig = sign(null, Buffer.from(body), key);
  return `${body}\n\u2014 ${name} ${Buffer.concat([keyId(name, publicKey), sig]).toString("base64")}\n`;
}
