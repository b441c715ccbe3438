import type { Database, Queryable } from "@icv/platform";
import type { NodeId } from "../merkle.ts";

const S = "log";

export type LogEnv = "live" | "test";

export interface KeyRow {
  environment: LogEnv;
  origin: string;
  public_key: string;
  private_key_enc: string;
}

export interface PendingRow {
  n: string;
  event_id: string;
  environment: LogEnv;
  fields: Record<string, string>;
}

export interface CheckpointRow {
  environment: LogEnv;
  size: number;
  root: Uint8Array;
  note: string;
}

export interface NewEntry {
  env: LogEnv;
  leafIndex: number;
  eventId: string;
  proofId: string;
  kind: string;
  entry: Buffer;
}

export interface NewNode {
  env: LogEnv;
  id: NodeId;
  hash: Buffer;
}

const buf = (b: Uint8Array): Buffer => Buffer.from(b.buffer, b.byteOffset, b.byteLength);

/** The transparency log's tables (keys, pending events, entries, node hashes, checkpoints, lease): the only SQL over them. */
export class LogStore {
  constructor(private readonly db: Database) {}

  async key(env: LogEnv): Promise<KeyRow | undefined> {
    const r = await this.db.query<KeyRow>(`SELECT environment, origin, public_key, private_key_enc FROM ${S}.keys WHERE environment = $1`, [env]);
    return r.rows[0];
  }

  /** The first key of env's log, unless another replica made it first (false: read it again). */
  async insertKey(env: LogEnv, origin: string, publicKey: string, sealed: string): Promise<boolean> {
    const r = await this.db.query(`INSERT INTO ${S}.keys (environment, origin, public_key, private_key_enc) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, [
      env,
      origin,
      publicKey,
      sealed,
    ]);
    return r.rowCount === 1;
  }

  /**
   * Queues events for the sequencer (in the consumer's transaction), leaving out any already logged.
   * Each id is looked up in the entries' unique index (a subquery with LIMIT stays a lookup per row):
   * as a NOT EXISTS, the planner read and hashed the whole log for every batch, a cost that grew
   * with the log.
   */
  static async queue(q: Queryable, rows: { eventId: string; env: LogEnv; fields: Record<string, string> }[]): Promise<void> {
    if (!rows.length) return;
    await q.query(
      `INSERT INTO ${S}.pending (event_id, environment, fields)
       SELECT x.id, x.env, x.fields FROM unnest($1::text[], $2::text[], $3::jsonb[]) AS x (id, env, fields)
        WHERE (SELECT 1 FROM ${S}.entries e WHERE e.event_id = x.id LIMIT 1) IS NULL
       ON CONFLICT (event_id) DO NOTHING`,
      [rows.map((r) => r.eventId), rows.map((r) => r.env), rows.map((r) => JSON.stringify(r.fields))],
    );
  }

  /**
   * Runs fn in one transaction if `holder` holds the sequencer's lease (taken when free or expired,
   * renewed for leaseMs); answers undefined when another replica holds it. The lease row stays
   * locked until the commit, so two replicas never sequence at once.
   */
  async withLease<T>(holder: string, leaseMs: number, fn: (q: Queryable) => Promise<T>): Promise<{ value: T } | undefined> {
    return this.db.tx(async (q) => {
      const r = await q.query(
        `UPDATE ${S}.lease SET holder = $1, expires_at = now() + make_interval(secs => $2::float8 / 1000)
          WHERE name = 'sequencer' AND (holder = $1 OR expires_at < now()) RETURNING 1`,
        [holder, leaseMs],
      );
      if (r.rowCount !== 1) return undefined;
      return { value: await fn(q) };
    });
  }

  /**
   * Whether any event waits (a read without a transaction: an idle sequencer neither takes nor renews the lease).
   * In key order, so that it reads the index: a plain LIMIT 1 scanned the table from its first page,
   * through every row the sequencer had deleted since the last vacuum.
   */
  async anyPending(): Promise<boolean> {
    return (await this.db.query(`SELECT 1 FROM ${S}.pending ORDER BY n LIMIT 1`)).rowCount === 1;
  }

  /** Gives the lease up (a clean stop): another replica takes over at once instead of after it expires. */
  async releaseLease(holder: string): Promise<void> {
    await this.db.query(`UPDATE ${S}.lease SET expires_at = 'epoch' WHERE name = 'sequencer' AND holder = $1`, [holder]);
  }

  /** The oldest queued events (ordered by the column: the text alias would sort "10" before "9"). */
  static async pending(q: Queryable, limit: number): Promise<PendingRow[]> {
    const r = await q.query<PendingRow>(`SELECT p.n::text AS n, p.event_id, p.environment, p.fields FROM ${S}.pending p ORDER BY p.n LIMIT $1`, [limit]);
    return r.rows;
  }

  static async sizes(q: Queryable): Promise<Map<LogEnv, number>> {
    const r = await q.query<{ environment: LogEnv; size: number }>(`SELECT environment, size::float8 AS size FROM ${S}.checkpoints`);
    return new Map(r.rows.map((x) => [x.environment, x.size]));
  }

  /** Writes a batch: its entries, the nodes they complete, the new checkpoints; drops the pending rows up to `upTo`. */
  static async append(
    q: Queryable,
    entries: NewEntry[],
    nodes: NewNode[],
    checkpoints: { env: LogEnv; size: number; root: Buffer; note: string; at: Date }[],
    upTo: string,
  ): Promise<void> {
    await q.query(
      `INSERT INTO ${S}.entries (environment, leaf_index, event_id, proof_id, kind, entry)
       SELECT env, i, id, p, k, decode(e, 'hex') FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[]) AS x (env, i, id, p, k, e)`,
      [
        entries.map((e) => e.env),
        entries.map((e) => e.leafIndex),
        entries.map((e) => e.eventId),
        entries.map((e) => e.proofId),
        entries.map((e) => e.kind),
        entries.map((e) => e.entry.toString("hex")),
      ],
    );
    await q.query(
      `INSERT INTO ${S}.nodes (environment, level, idx, hash)
       SELECT env, l, i, decode(h, 'hex') FROM unnest($1::text[], $2::int[], $3::bigint[], $4::text[]) AS x (env, l, i, h)`,
      [nodes.map((n) => n.env), nodes.map((n) => n.id.level), nodes.map((n) => n.id.index), nodes.map((n) => n.hash.toString("hex"))],
    );
    for (const c of checkpoints)
      await q.query(
        `INSERT INTO ${S}.checkpoints (environment, size, root, note, signed_at) VALUES ($1, $2, decode($3, 'hex'), $4, $5)
         ON CONFLICT (environment) DO UPDATE SET size = excluded.size, root = excluded.root, note = excluded.note, signed_at = excluded.signed_at`,
        [c.env, c.size, c.root.toString("hex"), c.note, c.at],
      );
    await q.query(`DELETE FROM ${S}.pending WHERE n <= $1`, [upTo]);
  }

  /** Stored node hashes of env by id (one query); a missing one is absent from the answer. */
  async nodes(env: LogEnv, ids: NodeId[], q: Queryable = this.db): Promise<Map<string, Buffer>> {
    if (!ids.length) return new Map();
    const r = await q.query<{ level: number; idx: number; hash: Uint8Array }>(
      `SELECT n.level, n.idx::float8 AS idx, n.hash FROM ${S}.nodes n JOIN unnest($2::int[], $3::bigint[]) AS w (l, i) ON n.level = w.l AND n.idx = w.i
        WHERE n.environment = $1`,
      [env, ids.map((i) => i.level), ids.map((i) => i.index)],
    );
    return new Map(r.rows.map((x) => [`${x.level}:${x.idx}`, buf(x.hash)]));
  }

  async checkpoint(env: LogEnv): Promise<CheckpointRow | undefined> {
    const r = await this.db.query<CheckpointRow>(`SELECT environment, size::float8 AS size, root, note FROM ${S}.checkpoints WHERE environment = $1`, [env]);
    return r.rows[0];
  }

  /** A proof's entry of one kind (its issuance or its revocation) in env's log. */
  async entryOf(env: LogEnv, proofId: string, kind: string): Promise<{ leaf_index: number; entry: Buffer } | undefined> {
    const r = await this.db.query<{ leaf_index: number; entry: Uint8Array }>(
      `SELECT leaf_index::float8 AS leaf_index, entry FROM ${S}.entries WHERE environment = $1 AND proof_id = $2 AND kind = $3 ORDER BY leaf_index LIMIT 1`,
      [env, proofId, kind],
    );
    const row = r.rows[0];
    return row && { leaf_index: row.leaf_index, entry: buf(row.entry) };
  }

  /** The entry at leaf_index of env's log. */
  async entryAt(env: LogEnv, leafIndex: number): Promise<{ leaf_index: number; entry: Buffer } | undefined> {
    const r = await this.db.query<{ entry: Uint8Array }>(`SELECT entry FROM ${S}.entries WHERE environment = $1 AND leaf_index = $2`, [env, leafIndex]);
    const row = r.rows[0];
    return row && { leaf_index: leafIndex, entry: buf(row.entry) };
  }

  /** Entries [start, end) of env's log, in order. */
  async entries(env: LogEnv, start: number, end: number): Promise<Buffer[]> {
    const r = await this.db.query<{ entry: Uint8Array }>(
      `SELECT entry FROM ${S}.entries WHERE environment = $1 AND leaf_index >= $2 AND leaf_index < $3 ORDER BY leaf_index`,
      [env, start, end],
    );
    return r.rows.map((x) => buf(x.entry));
  }

  /** The hashes of level `level` from index `from`, `count` of them at most, in order (a tile's row). */
  async nodeRow(env: LogEnv, level: number, from: number, count: number): Promise<Buffer[]> {
    const r = await this.db.query<{ hash: Uint8Array }>(
      `SELECT hash FROM ${S}.nodes WHERE environment = $1 AND level = $2 AND idx >= $3 AND idx < $4 ORDER BY idx`,
      [env, level, from, from + count],
    );
    return r.rows.map((x) => buf(x.hash));
  }

  /** The issuance entries of `proofIds` in env's log (one query). */
  async positions(env: LogEnv, proofIds: string[]): Promise<{ proof_id: string; leaf_index: number }[]> {
    if (!proofIds.length) return [];
    const r = await this.db.query<{ proof_id: string; leaf_index: number }>(
      `SELECT proof_id, leaf_index::float8 AS leaf_index FROM ${S}.entries WHERE environment = $1 AND proof_id = ANY($2::text[]) AND kind = 'issued'`,
      [env, proofIds],
    );
    return r.rows;
  }

  async pendingCount(): Promise<number> {
    const r = await this.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${S}.pending`);
    return r.rows[0].n;
  }
}
