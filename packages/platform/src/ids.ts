import { monotonicFactory } from "ulid";
import { pooledRandomByte } from "./random.ts";

export const ID_PREFIXES = {
  verification: "ver",
  verificationRequest: "vreq",
  session: "sess",
  authSession: "auth",
  webhookDelivery: "whd",
  tenant: "ten",
  apiKey: "key",
  event: "evt",
  testMessage: "tmsg",
  project: "prj",
  profile: "prf",
  consoleUser: "cu",
  consoleAudit: "aud",
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

/**
 * ulid's default source asks the operating system's generator once per character (16 calls per
 * id); this one takes one pooled byte per character (random.ts). 256 is a multiple of the 32
 * characters, so each stays equally likely.
 */
const randomFraction = (): number => pooledRandomByte() / 256;

const next = monotonicFactory(randomFraction);

/** A prefixed, time-sortable ULID id, e.g. `ver_01J...`. */
export function newId(kind: IdKind, now: number = Date.now()): string {
  return `${ID_PREFIXES[kind]}_${next(now)}`;
}

const ULID_RE = /^[0-9A-HJKMNP-TV-Z]{26}$/;

/** True when `id` is a well-formed id of this kind (cheap guard before any lookup). */
export function isId(kind: IdKind, id: string): boolean {
  const prefix = `${ID_PREFIXES[kind]}_`;
  return id.startsWith(prefix) && ULID_RE.test(id.slice(prefix.length));
}
