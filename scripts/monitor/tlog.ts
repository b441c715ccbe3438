// The monitor's own checks of the transparency log (RFC 9162, C2SP signed-note/tlog-checkpoint):
// written for the monitor from the specifications, sharing no code with the log service it checks.
import { createHash, createPublicKey, verify } from "node:crypto";

const sha = (...parts: Uint8Array[]): Buffer => {
  const h = createHash("sha256");
  for (const p of parts) h.update(p);
  return h.digest();
};
export const leafHash = (entry: Uint8Array): Buffer => sha(Buffer.from([0]), entry);
const nodeHash = (l: Uint8Array, r: Uint8Array): Buffer => sha(Buffer.from([1]), l, r);

export interface Checkpoint {
  origin: string;
  size: number;
  root: Buffer;
}

/** A checkpoint whose Ed25519 signature by `vkey` (name+hex key id+base64(0x01 ‖ key)) verifies; throws otherwise. */
export function verifyCheckpoint(note: string, vkey: string): Checkpoint {
  const m = /^([^+\s]+)\+([0-9a-f]{8})\+(\S+)$/.exec(vkey.trim());
  if (!m) throw new Error("the log key is not a C2SP verifier key");
  const [, name, idHex, b64] = m;
  const key = Buffer.from(b64, "base64");
  if (key.length !== 33 || key[0] !== 0x01) throw new Error("the log key is not an Ed25519 key");
  const id = sha(Buffer.from(`${name}\n`), key).subarray(0, 4);
  if (id.toString("hex") !== idHex) throw new Error("the log key's id does not match the key");
  const split = note.indexOf("\n\n");
  if (split < 0) throw new Error("the checkpoint is not a signed note");
  const body = note.slice(0, split + 1);
  const spki = createPublicKey({ key: Buffer.concat([Buffer.from("302a300506032b6570032100", "hex"), key.subarray(1)]), format: "der", type: "spki" });
  const signed = note
    .slice(split + 2)
    .split("\n")
    .some((line) => {
      const s = /^\u2014 (\S+) (\S+)$/.exec(line);
      if (!s || s[1] !== name) return false;
      const sig = Buffer.from(s[2], "base64");
      return sig.length === 68 && sig.subarray(0, 4).equals(id) && verify(null, Buffer.from(body), spki, sig.subarray(4));
    });
  if (!signed) throw new Error("the checkpoint is not signed by the log's key");
  const [origin, size, root] = body.split("\n");
  if (origin !== name) throw new Error(`the checkpoint's origin ${origin} is not the key's ${name}`);
  if (!/^\d+$/.test(size)) throw new Error("the checkpoint's size is not a number");
  return { origin, size: Number(size), root: Buffer.from(root, "base64") };
}

/** RFC 9162 2.1.4.2: whether `path` proves the tree (second, secondRoot) extends (first, firstRoot). */
export function verifyConsistency(first: number, second: number, firstRoot: Buffer, secondRoot: Buffer, path: Buffer[]): boolean {
  if (first === second) return path.length === 0 && firstRoot.equals(secondRoot);
  if (first < 1 || first > second || !path.length) return false;
  const p = (first & (first - 1)) === 0 ? [firstRoot, ...path] : path;
  let fn = first - 1;
  let sn = second - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  let fr = p[0];
  let sr = p[0];
  for (const c of p.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else sr = nodeHash(sr, c);
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && fr.equals(firstRoot) && sr.equals(secondRoot);
}

/**
 * The monitor's own copy of the tree: the roots of its perfect subtrees (a compact range from 0),
 * enough to add the entries it reads and compute the root the checkpoint must have.
 */
export class CompactRange {
  constructor(
    public size = 0,
    /** subtree roots from the largest (leftmost) to the smallest */
    public hashes: Buffer[] = [],
  ) {}

  add(leaf: Buffer): void {
    this.hashes.push(leaf);
    // merge while the two rightmost subtrees are of equal size (the bits of the new size tell)
    let n = this.size;
    while (n % 2 === 1) {
      const r = this.hashes.pop()!;
      const l = this.hashes.pop()!;
      this.hashes.push(nodeHash(l, r));
      n = Math.floor(n / 2);
    }
    this.size++;
  }

  root(): Buffer {
    if (!this.hashes.length) return sha();
    let h = this.hashes[this.hashes.length - 1];
    for (let i = this.hashes.length - 2; i >= 0; i--) h = nodeHash(this.hashes[i], h);
    return h;
  }
}
