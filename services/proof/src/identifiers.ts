/**
 * What a proof says about its identifier (DECISIONS.md, Proofs). No claim gives the identifier
 * back: `identifier_hash` is the hex SHA-256 of a per-proof random salt (16 bytes) and the
 * normalized identifier's UTF-8. The salt goes to the tenant beside the token, never inside it;
 * whoever knows identifier and salt checks the hash offline, nobody else can search for it.
 */
import { createHash } from "node:crypto";
import { pooledRandomBytes } from "@icv/platform";

export const newIdentifierSalt = (): string => pooledRandomBytes(16).toString("hex");

/** hex SHA-256(salt bytes ‖ UTF-8 identifier); an empty salt is a proof from before salting (the plain hash). */
export const identifierHash = (salt: string, identifier: string): string =>
  createHash("sha256").update(Buffer.from(salt, "hex")).update(identifier, "utf8").digest("hex");

/** Assets that are public by nature: a log entry (and a proof event) may name them. */
const PUBLIC_ASSET_TYPES: ReadonlySet<string> = new Set(["domain", "wallet", "social", "telegram_bot"]);

/** The transparency log's subject: a public asset's identifier, the salted hash of anything else (never a phone or an email). */
export const logSubject = (type: string, identifier: string, hash: string): string => (PUBLIC_ASSET_TYPES.has(type) ? identifier : hash);
