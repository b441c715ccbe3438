// The tree code against RFC 9162 as the test reads it: MTH, PATH and PROOF written here,
// recursively over the leaves (no stored nodes), must agree with what the service computes from
// its stored perfect subtrees for every size up to 70 and every leaf or earlier size.
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { consistencyRanges, foldRange, Frontier, inclusionRanges, leafHash, nodeKey, type NodeId } from "../src/merkle.ts";

const h = (...p: Buffer[]) => createHash("sha256").update(Buffer.concat(p)).digest();
const leaves = Array.from({ length: 70 }, (_, i) => h(Buffer.from([0]), Buffer.from(`entry ${i}`)));
const k = (n: number) => 2 ** Math.ceil(Math.log2(n) - 1);
const mth = (d: Buffer[]): Buffer =>
  d.length === 0 ? h() : d.length === 1 ? d[0] : h(Buffer.from([1]), mth(d.slice(0, k(d.length))), mth(d.slice(k(d.length))));
const path = (m: number, d: Buffer[]): Buffer[] =>
  d.length <= 1
    ? []
    : m < k(d.length)
      ? [...path(m, d.slice(0, k(d.length))), mth(d.slice(k(d.length)))]
      : [...path(m - k(d.length), d.slice(k(d.length))), mth(d.slice(0, k(d.length)))];
const subproof = (m: number, d: Buffer[], b: boolean): Buffer[] => {
  if (m === d.length) return b ? [] : [mth(d)];
  const s = k(d.length);
  return m <= s ? [...subproof(m, d.slice(0, s), b), mth(d.slice(s))] : [...subproof(m - s, d.slice(s), false), mth(d.slice(0, s))];
};

/** Every node the Frontier made while appending all leaves (what the sequencer stores). */
function stored(n: number): { tree: Frontier; nodes: Map<string, Buffer> } {
  const tree = new Frontier(0);
  const nodes = new Map<string, Buffer>();
  for (const l of leaves.slice(0, n)) for (const x of tree.append(l)) nodes.set(nodeKey(x.id), x.hash);
  return { tree, nodes };
}

describe("the log's tree", () => {
  it("has the RFC 9162 root at every size, from its right edge alone", () => {
    for (let n = 0; n <= 70; n++) {
      const { tree, nodes } = stored(n);
      expect(tree.root().equals(mth(leaves.slice(0, n))), `size ${n}`).toBe(true);
      // a restart reads only the right edge back: the root and the next appends stay the same
      const edge = new Map(Frontier.ids(n).map((id: NodeId) => [id.level, nodes.get(nodeKey(id))!]));
      const again = new Frontier(n, edge);
      expect(again.root().equals(tree.root())).toBe(true);
      if (n < 70) {
        again.append(leaves[n]);
        expect(again.root().equals(mth(leaves.slice(0, n + 1)))).toBe(true);
      }
    }
  });

  it("builds the RFC 9162 audit path and consistency proof from stored nodes", () => {
    for (let n = 1; n <= 70; n++) {
      const { nodes } = stored(n);
      const fold = (r: readonly [number, number]) => foldRange(r, (id) => nodes.get(nodeKey(id))!);
      for (let m = 0; m < n; m++) expect(inclusionRanges(m, n).map(fold), `path ${m} in ${n}`).toEqual(path(m, leaves.slice(0, n)));
      for (let m = 1; m <= n; m++) expect(consistencyRanges(m, n).map(fold), `proof ${m} -> ${n}`).toEqual(subproof(m, leaves.slice(0, n), true));
    }
  });

  it("hashes a leaf as SHA-256(0x00 ‖ entry), so an entry cannot pass for a node", () => {
    const e = Buffer.from('{"kind":"issued"}');
    expect(leafHash(e).equals(h(Buffer.from([0]), e))).toBe(true);
  });
});
