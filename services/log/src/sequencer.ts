import { randomUUID } from "node:crypto";
import { logEntries, startPump, type Clock, type Logger, type Pump, type Queryable } from "@icv/platform";
import { entryBytes } from "./entries.ts";
import type { LogKey } from "./log-key.ts";
import { EMPTY_ROOT, Frontier, leafHash, nodeKey } from "./merkle.ts";
import { checkpointBody, signNote } from "./note.ts";
import { LogStore, type LogEnv, type NewEntry, type NewNode } from "./store/log.ts";

export interface SequencerOptions {
  store: LogStore;
  keys: ReadonlyMap<LogEnv, LogKey>;
  clock: Clock;
  logger: Logger;
  /** How long a replica's lease lasts without a renewal (a crashed sequencer is replaced after it). */
  leaseMs?: number;
  /** Entries per batch at most (one transaction, one checkpoint per log). */
  batch?: number;
  /** At least this long between two batches (a checkpoint is signed at most once a second). */
  intervalMs?: number;
}

/**
 * Sequences the queued proof events: once a second at most, the replica holding the lease takes
 * what waits (up to `batch`), appends it to each environment's tree, stores the entries, the nodes
 * they complete and a newly signed checkpoint, and drops the queued rows, all in one transaction.
 * The stored tree is therefore always a signed checkpoint's, and a restart goes on from there.
 * Each tree's right edge is kept in memory and read again whenever the stored size differs (another
 * replica sequenced meanwhile).
 */
export class Sequencer {
  private readonly trees = new Map<LogEnv, Frontier>();
  private readonly holder = randomUUID();
  private pump?: Pump;

  constructor(private readonly o: SequencerOptions) {}

  /** Signs the empty checkpoint of a log that has none yet (its first start). */
  async init(): Promise<void> {
    await this.o.store.withLease(this.holder, this.o.leaseMs ?? 10_000, async (q) => {
      const sizes = await LogStore.sizes(q);
      const at = this.o.clock.now();
      for (const [env, key] of this.o.keys)
        if (!sizes.has(env)) await LogStore.append(q, [], [], [{ env, size: 0, root: EMPTY_ROOT, note: this.sign(key, 0, EMPTY_ROOT), at }], "0");
    });
  }

  start(): this {
    const interval = this.o.intervalMs ?? 1_000;
    // a full batch leaves more waiting: the next run comes after the interval all the same (one checkpoint a second)
    const run = async () => {
      if ((await this.once()).more) this.pump?.wake();
      return false;
    };
    this.pump = startPump("log-sequencer", run, interval, this.o.logger, interval);
    return this;
  }

  wake(): void {
    this.pump?.wake();
  }

  async stop(): Promise<void> {
    await this.pump?.stop();
    await this.o.store.releaseLease(this.holder);
  }

  /** One batch; answers how many entries it logged and whether more wait. */
  async once(): Promise<{ logged: number; more: boolean }> {
    const limit = this.o.batch ?? 20_000;
    if (!(await this.o.store.anyPending())) return { logged: 0, more: false };
    const r = await this.o.store.withLease(this.holder, this.o.leaseMs ?? 10_000, async (q) => {
      const rows = await LogStore.pending(q, limit);
      if (!rows.length) return { logged: 0, more: false, trees: new Map<LogEnv, Frontier>() };
      const sizes = await LogStore.sizes(q);
      const trees = new Map<LogEnv, Frontier>();
      for (const env of new Set(rows.map((x) => x.environment))) trees.set(env, (await this.tree(q, env, sizes.get(env) ?? 0)).clone());
      const at = this.o.clock.now();
      const entries: NewEntry[] = [];
      const nodes: NewNode[] = [];
      for (const row of rows) {
        const tree = trees.get(row.environment)!;
        const entry = entryBytes(row.fields, at);
        entries.push({ env: row.environment, leafIndex: tree.size, eventId: row.event_id, proofId: row.fields.proof_id, kind: row.fields.kind, entry });
        for (const n of tree.append(leafHash(entry))) nodes.push({ env: row.environment, ...n });
      }
      const checkpoints = [...trees].map(([env, tree]) => {
        const root = tree.root();
        return { env, size: tree.size, root, note: this.sign(this.o.keys.get(env)!, tree.size, root), at };
      });
      await LogStore.append(q, entries, nodes, checkpoints, rows[rows.length - 1].n);
      return { logged: rows.length, more: rows.length === limit, trees, entries };
    });
    if (!r) return { logged: 0, more: false }; // another replica holds the lease
    // the batch committed: its trees are the stored ones now
    for (const [env, tree] of r.value.trees) this.trees.set(env, tree);
    for (const env of r.value.trees.keys()) logEntries.inc({ environment: env }, r.value.entries?.filter((e) => e.env === env).length ?? 0);
    return { logged: r.value.logged, more: r.value.more };
  }

  private sign(key: LogKey, size: number, root: Buffer): string {
    return signNote(checkpointBody(key.origin, size, root), key.origin, key.publicKey, key.privateKey);
  }

  /** env's tree as stored (size from the checkpoint): from memory, or its right edge read again. */
  private async tree(q: Queryable, env: LogEnv, size: number): Promise<Frontier> {
    const known = this.trees.get(env);
    if (known?.size === size) return known;
    const ids = Frontier.ids(size);
    const found = await this.o.store.nodes(env, ids, q);
    const edge = new Map<number, Buffer>();
    for (const id of ids) {
      const h = found.get(nodeKey(id));
      if (!h) throw new Error(`the ${env} log is missing node ${nodeKey(id)} of its size ${size}`);
      edge.set(id.level, h);
    }
    const tree = new Frontier(size, edge);
    this.trees.set(env, tree);
    return tree;
  }
}
