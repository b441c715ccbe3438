import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import { seal, unseal, type Logger } from "@icv/platform";
import type { LogEnv, LogStore } from "./store/log.ts";
import { vkey } from "./note.ts";

/** One log's signing key: its origin (the checkpoint's first line and the note's key name) and Ed25519 key. */
export interface LogKey {
  env: LogEnv;
  origin: string;
  publicKey: Buffer;
  privateKey: KeyObject;
  vkey: string;
}

/** The raw 32 bytes of an Ed25519 public key (the last 32 of its SPKI DER). */
const rawPublic = (k: KeyObject): Buffer => k.export({ format: "der", type: "spki" }).subarray(-32);

/**
 * The log's origin for an environment: the public host and path with `/log`, `/test` after it for
 * the test log (a schema-less URL, as C2SP tlog-checkpoint asks).
 */
export function originOf(publicBaseUrl: string, env: LogEnv): string {
  const u = new URL(publicBaseUrl);
  const base = `${u.host}${u.pathname.replace(/\/+$/, "")}/log`;
  return env === "test" ? `${base}/test` : base;
}

/**
 * The key of env's log: read and opened, or generated at its first start (Ed25519, the private key
 * sealed under the key-encryption key as the proof keys are). Another replica's first key wins a race.
 */
export async function ensureLogKey(store: LogStore, env: LogEnv, origin: string, kek: Buffer, logger: Logger): Promise<LogKey> {
  const row = await store.key(env);
  if (row) {
    const publicKey = Buffer.from(row.public_key, "base64");
    const privateKey = createPrivateKey({ key: unseal(row.private_key_enc, kek, row.origin), format: "der", type: "pkcs8" });
    // a key that does not belong to its public half (a swapped or damaged record) is never used
    if (!rawPublic(createPublicKey(privateKey)).equals(publicKey)) throw new Error(`the ${env} log key does not match its public key`);
    return { env, origin: row.origin, publicKey, privateKey, vkey: vkey(row.origin, publicKey) };
  }
  const { privateKey } = generateKeyPairSync("ed25519");
  const publicKey = rawPublic(createPublicKey(privateKey));
  const sealed = seal(privateKey.export({ format: "der", type: "pkcs8" }), kek, origin);
  if (await store.insertKey(env, origin, publicKey.toString("base64"), sealed)) {
    logger.info({ environment: env, origin }, "generated the transparency log's key");
    return { env, origin, publicKey, privateKey, vkey: vkey(origin, publicKey) };
  }
  return ensureLogKey(store, env, origin, kek, logger);
}
