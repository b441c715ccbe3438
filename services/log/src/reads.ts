import { AppError } from "@icv/platform";
import { consistencyRanges, foldRange, inclusionRanges, nodeKey, subtrees, type NodeId, type Range } from "./merkle.ts";
import type { LogEnv, LogStore } from "./store/log.ts";

/** The most entries one entries call answers (DECISIONS.md: an entries range over 1,000 is validation_error). */
export const MAX_ENTRIES = 1_000;
/** A tlog-tiles tile is 256 hashes (or entries) wide, each level of tiles 8 levels of the tree. */
export const TILE_WIDTH = 256;
const TILE_HEIGHT = 8;

const invalid = (message: string) => new AppError("validation_error", message);

/** The latest signed checkpoint of env's log (signed at its first start: never absent once it ran). */
export async function latestCheckpoint(store: LogStore, env: LogEnv) {
  const c = await store.checkpoint(env);
  if (!c) throw new AppError("service_unavailable", "the log has not signed its first checkpoint yet");
  return c;
}

/** The hashes of `ranges` in a tree, from its stored nodes (one query for all of them). */
async function rangeHashes(store: LogStore, env: LogEnv, ranges: Range[]): Promise<Buffer[]> {
  const ids = new Map<string, NodeId>();
  for (const r of ranges) for (const id of subtrees(r)) ids.set(nodeKey(id), id);
  const nodes = await store.nodes(env, [...ids.values()]);
  return ranges.map((r) =>
    foldRange(r, (id) => {
      const h = nodes.get(nodeKey(id));
      if (!h) throw new Error(`the ${env} log is missing node ${nodeKey(id)}`);
      return h;
    }),
  );
}

/** A proof's entry (issued or revoked), its audit path to the latest checkpoint, and that checkpoint. */
export async function inclusion(store: LogStore, env: LogEnv, which: { proofId: string; kind: string } | { leafIndex: number }) {
  // the checkpoint first: nodes are never changed, so a path to its size stays right whatever is appended meanwhile
  const cp = await latestCheckpoint(store, env);
  const e = "proofId" in which ? await store.entryOf(env, which.proofId, which.kind) : await store.entryAt(env, which.leafIndex);
  if (!e || e.leaf_index >= cp.size) throw new AppError("not_found", "the proof is not in the log yet");
  const proof = await rangeHashes(store, env, inclusionRanges(e.leaf_index, cp.size));
  return { entry: e.entry, leafIndex: e.leaf_index, proof, checkpoint: cp.note, treeSize: cp.size };
}

/** The consistency proof from tree size first to second (1 <= first <= second <= the latest checkpoint's size). */
export async function consistency(store: LogStore, env: LogEnv, first: number, second: number) {
  if (first < 1) throw invalid("first must be at least 1");
  if (first > second) throw invalid("first must not be greater than second");
  const cp = await latestCheckpoint(store, env);
  if (second > cp.size) throw invalid(`second is beyond the tree size (${cp.size})`);
  return rangeHashes(store, env, consistencyRanges(first, second));
}

/** Entries [start, end), at most MAX_ENTRIES, within the latest checkpoint. */
export async function entries(store: LogStore, env: LogEnv, start: number, end: number) {
  if (start > end) throw invalid("start must not be greater than end");
  if (end - start > MAX_ENTRIES) throw invalid(`at most ${MAX_ENTRIES} entries at once`);
  const cp = await latestCheckpoint(store, env);
  if (end > cp.size) throw invalid(`end is beyond the tree size (${cp.size})`);
  return store.entries(env, start, end);
}

/**
 * A C2SP tlog-tiles tile: level >= 0 the hashes of tree level 8·level, index·256 onwards, `width`
 * of them (32 bytes each); level -1 the entry bundle (each entry as a big-endian uint16 length and
 * its bytes). Only what the latest checkpoint covers; anything else is not_found.
 */
export async function tile(store: LogStore, env: LogEnv, level: number, index: number, width: number): Promise<Buffer> {
  if (width < 1 || width > TILE_WIDTH || level < -1 || level > 63) throw new AppError("not_found", "no such tile");
  const cp = await latestCheckpoint(store, env);
  const treeLevel = level < 0 ? 0 : level * TILE_HEIGHT;
  const available = Math.floor(cp.size / 2 ** treeLevel) - index * TILE_WIDTH;
  if (available < width) throw new AppError("not_found", "no such tile in the latest checkpoint");
  if (level < 0) {
    const es = await store.entries(env, index * TILE_WIDTH, index * TILE_WIDTH + width);
    return Buffer.concat(
      es.flatMap((e) => {
        const len = Buffer.alloc(2);
        len.writeUInt16BE(e.length);
        return [len, e];
      }),
    );
  }
  const row = await store.nodeRow(env, treeLevel, index * TILE_WIDTH, width);
  if (row.length !== width) throw new Error(`the ${env} log is missing hashes of tile ${level}/${index}`);
  return Buffer.concat(row);
}

/** Where each of the proofs is logged (its issuance entry) and the latest checkpoint's size. */
export async function positions(store: LogStore, env: LogEnv, proofIds: string[]) {
  const [cp, found] = await Promise.all([latestCheckpoint(store, env), store.positions(env, proofIds)]);
  return found.filter((p) => p.leaf_index < cp.size).map((p) => ({ proofId: p.proof_id, leafIndex: p.leaf_index, checkpointSize: cp.size }));
}
