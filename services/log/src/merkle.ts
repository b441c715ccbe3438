import { createHash } from "node:crypto";

/**
 * The RFC 9162 Merkle tree (section 2.1): SHA-256, leaf hash H(0x00 ‖ entry), node hash
 * H(0x01 ‖ left ‖ right). The log stores the hash of every perfect subtree ("node": level l,
 * index i covers leaves [i·2^l, (i+1)·2^l)), so any subtree hash, audit path or consistency
 * proof is a fold over O(log n) stored nodes, read in one query.
 */

export interface NodeId {
  level: number;
  index: number;
}

/** A leaf range [start, end) whose hash (MTH) a proof needs. */
export type Range = readonly [start: number, end: number];

const LEAF = Buffer.from([0]);
const NODE = Buffer.from([1]);

export const leafHash = (entry: Uint8Array): Buffer => createHash("sha256").update(LEAF).update(entry).digest();
export const nodeHash = (left: Uint8Array, right: Uint8Array): Buffer => createHash("sha256").update(NODE).update(left).update(right).digest();
export const EMPTY_ROOT = createHash("sha256").digest();

/** The largest power of two smaller than n (n > 1). */
export function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** The perfect subtrees that make up [start, end), left to right (start aligned, as every range of the recursion is). */
export function subtrees([start, end]: Range): NodeId[] {
  const out: NodeId[] = [];
  let at = start;
  while (at < end) {
    let level = 0;
    while (at % 2 ** (level + 1) === 0 && at + 2 ** (level + 1) <= end) level++;
    out.push({ level, index: at / 2 ** level });
    at += 2 ** level;
  }
  return out;
}

/** MTH of a range from the hashes of its subtrees (a right fold: RFC 9162 splits at the largest power of two). */
export function foldRange(range: Range, node: (id: NodeId) => Buffer): Buffer {
  const parts = subtrees(range).map(node);
  if (!parts.length) return EMPTY_ROOT;
  let h = parts[parts.length - 1];
  for (let i = parts.length - 2; i >= 0; i--) h = nodeHash(parts[i], h);
  return h;
}

/** The ranges whose hashes form the audit path of leaf m in a tree of size n, leaf side first (RFC 9162 2.1.3.1). */
export function inclusionRanges(m: number, n: number): Range[] {
  const walk = (a: number, b: number): Range[] => {
    if (b - a <= 1) return [];
    const k = splitPoint(b - a);
    return m < a + k ? [...walk(a, a + k), [a + k, b]] : [...walk(a + k, b), [a, a + k]];
  };
  return walk(0, n);
}

/** The ranges whose hashes form the consistency proof from size m to size n, 0 < m <= n (RFC 9162 2.1.4.1). */
export function consistencyRanges(m: number, n: number): Range[] {
  const sub = (a: number, b: number, complete: boolean): Range[] => {
    if (m === b) return complete ? [] : [[a, b]];
    const k = splitPoint(b - a);
    return m <= a + k ? [...sub(a, a + k, complete), [a + k, b]] : [...sub(a + k, b, false), [a, a + k]];
  };
  return m === n ? [] : sub(0, n, true);
}

export const nodeKey = (id: NodeId): string => `${id.level}:${id.index}`;

/**
 * The right edge of a tree: the roots of its perfect subtrees by level (the set bits of its size),
 * enough to append leaves and compute the root without reading anything else.
 */
export class Frontier {
  constructor(
    public size: number,
    private readonly edge: Map<number, Buffer> = new Map(),
  ) {}

  /** The nodes a tree of `size` keeps on its right edge (to load them). */
  static ids(size: number): NodeId[] {
    const ids: NodeId[] = [];
    for (let level = 0; 2 ** level <= size; level++) if (Math.floor(size / 2 ** level) % 2 === 1) ids.push({ level, index: Math.floor(size / 2 ** level) - 1 });
    return ids;
  }

  clone(): Frontier {
    return new Frontier(this.size, new Map(this.edge));
  }

  /** Appends a leaf; answers every node it completes (its own leaf hash first). */
  append(leaf: Buffer): { id: NodeId; hash: Buffer }[] {
    const made = [{ id: { level: 0, index: this.size }, hash: leaf }];
    let h = leaf;
    let level = 0;
    while (Math.floor(this.size / 2 ** level) % 2 === 1) {
      h = nodeHash(this.edge.get(level)!, h);
      this.edge.delete(level);
      level++;
      made.push({ id: { level, index: Math.floor(this.size / 2 ** level) }, hash: h });
    }
    this.edge.set(level, h);
    this.size++;
    return made;
  }

  root(): Buffer {
    let h: Buffer | undefined;
    for (const level of [...this.edge.keys()].sort((a, b) => a - b)) h = h ? nodeHash(this.edge.get(level)!, h) : this.edge.get(level)!;
    return h ?? EMPTY_ROOT;
  }
}
