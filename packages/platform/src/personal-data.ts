import { createCipheriv, createDecipheriv, createHmac, createSecretKey, randomBytes, type KeyObject } from "node:crypto";
import type { Logger } from "./logger.ts";
import { dataDirSecret } from "./secrets.ts";
import { pooledRandomBytes } from "./random.ts";

/**
 * Personal data at rest (DECISIONS.md, "Personal data: at rest, retention, erasure, export"):
 * identifiers, client_metadata, destinations and stored message texts are sealed with
 * AES-256-GCM under DATA_ENCRYPTION_KEY, one random nonce per value, as
 * `pd1.<key version>.<base64url(nonce ‖ tag ‖ ciphertext)>`. The additional data names the row and
 * column (`aad`), so a sealed value copied onto another row does not open. Lookups by identifier
 * go by a blind index: HMAC-SHA256 under a separate key (DATA_BLIND_INDEX_KEY), so the index
 * reveals nothing without that key and does not change when the encryption key rotates.
 */
export const SEALED_PREFIX = "pd1.";
const SEALED = /^pd1\.(\d{1,9})\.([A-Za-z0-9_-]+)$/;

/** A sealed value whose key version is not configured, or that the configured key does not open. */
export class SealedDataError extends Error {
  constructor(
    message: string,
    readonly keyVersion: number,
  ) {
    super(message);
    this.name = "SealedDataError";
  }
}

let ephemeral: PersonalData | undefined;

/** A fresh 12-byte AES-GCM nonce, used once (pooled: random.ts). */
const nonce = (): Buffer => pooledRandomBytes(12);

export class PersonalData {
  readonly currentVersion: number;
  /** The keys imported once (a raw Buffer key is imported again on every cipher: 3× the cost of the cipher itself). */
  private readonly keyObjects: ReadonlyMap<number, KeyObject>;
  private readonly indexKeyObject: KeyObject;

  /** `keys`: key version → 32-byte key; the first one seals, every one opens. */
  constructor(
    private readonly keys: ReadonlyMap<number, Buffer>,
    indexKey: Buffer,
    currentVersion?: number,
  ) {
    const first = currentVersion ?? keys.keys().next().value;
    if (first === undefined || !keys.has(first)) throw new Error("personal data: no encryption key");
    for (const [v, k] of keys) if (k.length !== 32) throw new Error(`personal data: key version ${v} is not 32 bytes`);
    if (indexKey.length < 32) throw new Error("personal data: the blind-index key must be at least 32 bytes");
    this.currentVersion = first;
    this.keyObjects = new Map([...keys].map(([v, k]) => [v, createSecretKey(k)]));
    this.indexKeyObject = createSecretKey(indexKey);
  }

  /**
   * Random keys held by this process only, one set per process, for tests that build a store by
   * hand on a throwaway database (a service uses fromConfig).
   */
  static ephemeral(): PersonalData {
    ephemeral ??= new PersonalData(new Map([[1, randomBytes(32)]]), randomBytes(32));
    return ephemeral;
  }

  /**
   * The keys of a service: DATA_ENCRYPTION_KEY (`base64` for version 1, or `v:base64,v:base64`,
   * the first sealing) and DATA_BLIND_INDEX_KEY; on embedded defaults each is generated into the
   * data dir with a warning, as the proof key KEK is.
   */
  static fromConfig(config: { DATA_DIR: string; DATA_ENCRYPTION_KEY?: string; DATA_BLIND_INDEX_KEY?: string }, logger: Logger): PersonalData {
    const keys = parseDataKeys(config.DATA_ENCRYPTION_KEY ?? dataDirSecret(config.DATA_DIR, "data-key", "DATA_ENCRYPTION_KEY", logger));
    const index = config.DATA_BLIND_INDEX_KEY ?? dataDirSecret(config.DATA_DIR, "blind-index-key", "DATA_BLIND_INDEX_KEY", logger);
    return new PersonalData(keys, Buffer.from(index, "base64"));
  }

  hasVersion(version: number): boolean {
    return this.keys.has(version);
  }

  /** Seals one value under the current key; null stays null. */
  seal(plain: string, aad: string): string;
  seal(plain: string | null, aad: string): string | null;
  seal(plain: string | null, aad: string): string | null {
    if (plain === null) return null;
    const key = this.keyObjects.get(this.currentVersion) as KeyObject;
    const iv = nonce();
    const c = createCipheriv("aes-256-gcm", key, iv);
    c.setAAD(Buffer.from(aad));
    const body = Buffer.concat([c.update(plain, "utf8"), c.final()]);
    return `${SEALED_PREFIX}${this.currentVersion}.${Buffer.concat([iv, c.getAuthTag(), body]).toString("base64url")}`;
  }

  /**
   * Opens a sealed value. A value that is not sealed (a row written before sealing, not yet
   * migrated) is answered as it is. A sealed value that does not open throws: never garbage.
   */
  open(value: string, aad: string): string;
  open(value: string | null, aad: string): string | null;
  open(value: string | null, aad: string): string | null {
    if (value === null || !value.startsWith(SEALED_PREFIX)) return value;
    const m = SEALED.exec(value);
    if (!m) throw new SealedDataError("a sealed value is malformed", 0);
    const version = Number(m[1]);
    const key = this.keyObjects.get(version);
    if (!key) throw new SealedDataError(`data is sealed with key version ${version}, which DATA_ENCRYPTION_KEY does not hold`, version);
    const raw = Buffer.from(m[2], "base64url");
    try {
      if (raw.length < 28) throw new Error("truncated");
      const d = createDecipheriv("aes-256-gcm", key, raw.subarray(0, 12), { authTagLength: 16 });
      d.setAAD(Buffer.from(aad));
      d.setAuthTag(raw.subarray(12, 28));
      return Buffer.concat([d.update(raw.subarray(28)), d.final()]).toString("utf8");
    } catch {
      throw new SealedDataError(`DATA_ENCRYPTION_KEY version ${version} does not open data sealed with key version ${version} (wrong key)`, version);
    }
  }

  /** A JSON object sealed as a JSON string (for jsonb columns); null stays null. */
  sealJson(value: Record<string, unknown> | null, aad: string): string | null {
    return value === null ? null : JSON.stringify(this.seal(JSON.stringify(value), aad));
  }

  /** Opens what sealJson stored (read back by the driver as a string), or a not yet sealed object. */
  openJson(value: unknown, aad: string): Record<string, unknown> | null {
    if (value === null || value === undefined) return null;
    if (typeof value === "string") return JSON.parse(this.open(value, aad)) as Record<string, unknown>;
    return value as Record<string, unknown>;
  }

  /** The blind index of one identifier of a kind (the kind keeps equal strings of two kinds apart). */
  index(kind: string, value: string): string {
    return createHmac("sha256", this.indexKeyObject).update(`${kind}\u0000${value}`).digest("base64url");
  }

  /** The key version a sealed value names, or undefined when it is not sealed. */
  static versionOf(value: string | null): number | undefined {
    const m = value === null ? null : SEALED.exec(value);
    return m ? Number(m[1]) : undefined;
  }
}

/** `base64` (version 1) or `2:base64,1:base64` (the first seals, all open). */
export function parseDataKeys(value: string): Map<number, Buffer> {
  const keys = new Map<number, Buffer>();
  const parts = value.includes(":") ? value.split(",") : [`1:${value}`];
  for (const part of parts) {
    const [v, b64] = part.trim().split(":");
    const version = Number(v);
    const key = Buffer.from(b64 ?? "", "base64");
    if (!Number.isInteger(version) || version < 1 || key.length !== 32) throw new Error("DATA_ENCRYPTION_KEY must be 32 bytes base64, or version:base64 pairs");
    if (keys.has(version)) throw new Error(`DATA_ENCRYPTION_KEY names key version ${version} twice`);
    keys.set(version, key);
  }
  return keys;
}

/** Whether a string is a valid DATA_ENCRYPTION_KEY (config validation). */
export function isDataKeys(value: string): boolean {
  try {
    parseDataKeys(value);
    return true;
  } catch {
    return false;
  }
}
