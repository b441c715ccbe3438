import path from "node:path";
import { ConfigError, type Config } from "../config.ts";
import { DatabaseError, openDatabase, type Database } from "../database.ts";
import type { Logger } from "../logger.ts";
import { EVENTS_CHANNEL } from "./channels.ts";
import { actionable, handleFresh, startConsumedPruning } from "./consumer.ts";
import type { BroadcastOptions, ConsumerOptions, EventLog, EventRecord, Subscription } from "./event-log.ts";
import { startPump, type Pump } from "./pump.ts";
import { outboxColumns, toRecord, type OutboxRow } from "./records.ts";
import { processSpan } from "./spans.ts";
import { sourcesOf } from "./topics.ts";
import { runsBackgroundWork } from "../workers.ts";
import { tracingEnabled } from "../tracing.ts";

const BATCH = 500;

interface Source {
  /** database and schema: the key of openSources */
  key: string;
  name: string;
  db: Database;
  wakers: Set<() => void>;
  unlisten: () => Promise<void>;
  /** False until `<name>.outbox` was seen: its service may not have migrated yet. */
  present: boolean;
  /** Counts the source's NOTIFYs: a read started before the latest one may miss its rows. */
  notified: number;
  /** Reads under way, by position: readers of the same position since the same NOTIFY share one. */
  reading: Map<number, { notified: number; rows: Promise<OutboxRow[]> }>;
  /**
   * The last rows read (at most BATCH, every row after `from` up to the last one's seq: reads that
   * go on from where the previous one ended are joined); `notified` when the latest started, and
   * whether it was a full batch (more rows were waiting).
   */
  recent?: { from: number; rows: OutboxRow[]; notified: number; full: boolean };
}

/** The outbox table of a source that has not been migrated yet (its service starts later). */
const missingTable = (e: unknown) => e instanceof DatabaseError && e.code === "42P01";
/** An outbox without the traceparent column (tracing on): its service has not applied outbox_002 yet. */
const missingColumn = (e: unknown) => e instanceof DatabaseError && e.code === "42703";

/**
 * How long a consumer group may pass over batches holding none of its event types before its
 * cursor row is moved anyway (ConsumerOptions.eventTypes): what a restart reads again.
 */
const SKIPPED_CURSOR_MOVE_MS = 10_000;

/**
 * The postgres transport: consumers read the owning services' outbox tables in `seq` order (the
 * relay stamps seq in commit order), woken by NOTIFY and polling every EVENT_POLL_INTERVAL_MS.
 * A consumer group's position per source lives in the consumer's own `event_cursors` row; the
 * row is locked while a batch is applied, so one replica of a group works a source at a time.
 * Tracing on, the rows' `traceparent`s are read with them: each handling runs in a CONSUMER span
 * of the trace that wrote its events (consumer.ts, spans.ts).
 */
export class PostgresEventLog implements EventLog {
  readonly transport = "postgres";
  /** The sources this log follows (shared with the other logs of the process: openSources). */
  private readonly sources = new Map<string, Promise<Source>>();
  /** Running pumps and the source each follows. */
  private readonly pumps = new Map<Pump, Source>();

  constructor(
    private readonly config: Config,
    private readonly logger: Logger,
  ) {}

  private source(name: string): Promise<Source> {
    let s = this.sources.get(name);
    if (!s) {
      const url = this.config.databaseUrl(name as Parameters<Config["databaseUrl"]>[0]);
      // a service alone follows another's outbox in that service's database: an embedded one of this process would never hold it
      if (this.config.alone && this.config.alone !== name && !url)
        throw new ConfigError(
          `invalid configuration: DATABASE_URL is not set: ${this.config.alone}, started alone, follows the events of ${name}, which are in ${name}'s database; ` +
            `set DATABASE_URL (one Postgres for every service, or ${name.toUpperCase()}_DATABASE_URL) or KAFKA_BROKERS`,
        );
      s = openSource(name, url, url ? undefined : path.join(this.config.DATA_DIR, "pgdata"), this.logger, this.config);
      this.sources.set(name, s);
      s.catch(() => this.sources.delete(name));
    }
    return s;
  }

  /**
   * Rows of src after `position`, oldest first, the events of the wanted topics among them, and
   * whether to read again at once. Every follower of a source in this process (consumer groups,
   * broadcasts) is woken by the same NOTIFY and, caught up, reads from the same position: they
   * share one query, started after that NOTIFY, instead of sending one each. A follower behind
   * rows another one read already takes them from that read (final: the relay stamps seq in commit
   * order, so no row below the last one read can appear later) and, when more may wait, reads on
   * at once from where it ended, where the others are.
   */
  private async read(src: Source, position: number, topics: string[]): Promise<{ rows: OutboxRow[]; events: EventRecord[]; more: boolean }> {
    const recent = src.recent;
    let rows: OutboxRow[];
    let more: boolean;
    if (recent && recent.from <= position && position < recent.rows[recent.rows.length - 1].seq!) {
      rows = recent.rows.filter((row) => row.seq! > position);
      // rows after it wait when that read was a full batch, and may since a NOTIFY that came after it started
      more = recent.full || recent.notified !== src.notified;
    } else {
      let shared = src.reading.get(position);
      if (!shared || shared.notified !== src.notified) {
        const read = this.select(src, position);
        const entry = { notified: src.notified, rows: read };
        src.reading.set(position, entry);
        const done = () => {
          if (src.reading.get(position) === entry) src.reading.delete(position);
        };
        read.then((got) => {
          done();
          remember(src, position, got, entry.notified);
        }, done);
        shared = entry;
      }
      rows = await shared.rows;
      more = rows.length === BATCH;
    }
    return { rows, events: rows.filter((row) => topics.includes(row.aggregate_type)).map(toRecord), more };
  }

  private async select(src: Source, position: number): Promise<OutboxRow[]> {
    let missing = false;
    // ordered by the column (not the float8 alias of the select list), so the seq index answers in order
    const r = await src.db
      .query<OutboxRow>(`SELECT ${outboxColumns()} FROM ${src.name}.outbox o WHERE o.seq > $1 ORDER BY o.seq LIMIT ${BATCH}`, [position])
      .catch((e) => {
        // not migrated yet: nothing to read; the pump polls until the table is there (and, read
        // with tracing on, until it has its traceparent column: a release's first start)
        if (!(missingTable(e) || missingColumn(e)) || src.present) throw e;
        missing = true;
        return { rows: [] as OutboxRow[], rowCount: 0 };
      });
    if (!src.present && !missing) {
      src.present = true;
      this.logger.debug({ source: src.name }, "source outbox present");
    }
    return r.rows;
  }

  private run(name: string, src: Source, once: () => Promise<boolean>): Subscription {
    const pump = startPump(name, once, this.config.EVENT_POLL_INTERVAL_MS, this.logger, this.config.EVENT_BATCH_WINDOW_MS);
    src.wakers.add(pump.wake);
    this.pumps.set(pump, src);
    return {
      close: async () => {
        src.wakers.delete(pump.wake);
        this.pumps.delete(pump);
        await pump.stop();
      },
    };
  }

  async consume(opts: ConsumerOptions): Promise<Subscription> {
    // a group works one batch at a time (the cursor row): under `npm start` with several workers
    // the background worker does it, the others would only lose the race for the cursor
    if (!runsBackgroundWork()) return { close: async () => {} };
    const subs: Subscription[] = [];
    for (const name of sourcesOf(opts.topics)) {
      const src = await this.source(name);
      const cursors = `${opts.schema}.event_cursors`;
      await opts.db.query(`INSERT INTO ${cursors} (consumer, source) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [opts.group, name]);
      // the group's cursor row as this process last moved it (read again when another replica moved
      // it), and how far this process has read: past the cursor when it passed over batches holding
      // none of the group's event types
      let cursor: number | undefined;
      let readTo = 0;
      let cursorMovedAt = Date.now();
      const once = async (): Promise<boolean> => {
        // read the source first: the source may be the same embedded database, which cannot
        // answer a second query while this consumer's transaction holds it
        if (cursor === undefined) {
          cursor = readTo = (
            await opts.db.query<{ position: number }>(`SELECT position::float8 AS position FROM ${cursors} WHERE consumer = $1 AND source = $2`, [
              opts.group,
              name,
            ])
          ).rows[0].position;
        }
        const from = cursor;
        const { rows, events, more } = await this.read(src, readTo, opts.topics);
        if (!rows.length) return false;
        const to = rows[rows.length - 1].seq!;
        const unique = await actionable(opts, events);
        if (!unique.length && Date.now() - cursorMovedAt < SKIPPED_CURSOR_MOVE_MS) {
          readTo = to;
          return more;
        }
        let handled: EventRecord[] = [];
        const moved = await opts.db.tx(async (q) => {
          // one statement moves the cursor (its row lock keeps replicas of the group apart: one
          // that finds the position moved has lost the batch to another) and records the ids
          const claim = await q.query<{ claimed: boolean; fresh: string[] | null }>(
            `WITH cur AS (UPDATE ${cursors} SET position = $4 WHERE consumer = $1 AND source = $2 AND position = $3 RETURNING 1),
                  ins AS (INSERT INTO ${opts.schema}.event_consumed (consumer, event_id) SELECT $1, unnest($5::text[]) WHERE EXISTS (SELECT 1 FROM cur)
                          ON CONFLICT DO NOTHING RETURNING event_id)
             SELECT EXISTS (SELECT 1 FROM cur) AS claimed, (SELECT array_agg(event_id) FROM ins) AS fresh`,
            [opts.group, name, from, to, unique.map((e) => e.id)],
          );
          if (!claim.rows[0].claimed) return false;
          handled = await handleFresh(q, opts, unique, new Set(claim.rows[0].fresh ?? []), "postgresql");
          await opts.beforeAck?.(handled);
          return true;
        });
        // another replica moved the cursor: read it again next time
        if (moved) {
          cursor = readTo = to;
          cursorMovedAt = Date.now();
        } else cursor = undefined;
        if (handled.length) opts.afterCommit?.(handled);
        return moved ? more : false;
      };
      subs.push(this.run(`consume:${opts.group}:${name}`, src, once));
    }
    const pruning = startConsumedPruning(opts, this.logger);
    return {
      close: async () => {
        await pruning.stop();
        await Promise.all(subs.map((s) => s.close()));
      },
    };
  }

  async broadcast(opts: BroadcastOptions): Promise<Subscription> {
    const subs: Subscription[] = [];
    for (const name of sourcesOf(opts.topics)) {
      const src = await this.source(name);
      // from now on: the current end of the source (an outbox not yet made starts at 0)
      const end = () =>
        src.db.query<{ max: number }>(`SELECT coalesce(max(seq), 0)::float8 AS max FROM ${name}.outbox`).then(
          (r) => r.rows[0].max,
          (e) => (missingTable(e) ? 0 : Promise.reject(e)),
        );
      let position: number | undefined = await end().catch(() => undefined);
      const once = async (): Promise<boolean> => {
        position ??= await end();
        const { rows, events, more } = await this.read(src, position, opts.topics);
        if (!rows.length) return false;
        position = rows[rows.length - 1].seq!;
        for (const e of events) {
          if (tracingEnabled()) processSpan({ subscriber: opts.name }, "postgresql", [e], () => this.deliver(opts, e));
          else this.deliver(opts, e);
        }
        return more;
      };
      subs.push(this.run(`broadcast:${name}`, src, once));
    }
    return { close: async () => void (await Promise.all(subs.map((s) => s.close()))) };
  }

  /** Hands one event to a broadcast subscriber; its failure is logged, never thrown. */
  private deliver(opts: BroadcastOptions, e: EventRecord): void {
    try {
      opts.onEvent(e);
    } catch (err) {
      this.logger.error({ err, event_id: e.id }, "event listener failed");
    }
  }

  async close(): Promise<void> {
    await Promise.all(
      [...this.pumps].map(([pump, src]) => {
        src.wakers.delete(pump.wake);
        return pump.stop();
      }),
    );
    this.pumps.clear();
    const sources = await Promise.allSettled([...this.sources.values()]);
    this.sources.clear();
    for (const s of sources) if (s.status === "fulfilled") await releaseSource(s.value);
  }
}

/** Keeps the rows a read from `position` got in src.recent, after the rows before them when it went on from there. */
function remember(src: Source, position: number, got: OutboxRow[], notified: number): void {
  if (!got.length) return;
  const full = got.length === BATCH;
  const recent = src.recent;
  const last = recent?.rows[recent.rows.length - 1].seq ?? -1;
  if (recent && position === last) {
    const rows = recent.rows.concat(got);
    const drop = Math.max(0, rows.length - BATCH);
    src.recent = { from: drop ? rows[drop - 1].seq! : recent.from, rows: drop ? rows.slice(drop) : rows, notified, full };
  } else if (got[got.length - 1].seq! > last) src.recent = { from: position, rows: got, notified, full };
}

/**
 * The sources open in this process, by database and schema. The services of one process (`npm
 * start` hosts them all) follow the same outboxes: they share one pool, one LISTEN and the reads
 * of each source, so a NOTIFY costs one query per source, not one per follower.
 */
const openSources = new Map<string, { refs: number; source: Promise<Source> }>();

function openSource(
  name: string,
  url: string | undefined,
  dataDir: string | undefined,
  logger: Logger,
  config: Pick<Config, "RETRY_BACKOFF_MAX_MS" | "DATABASE_QUERY_TIMEOUT_MS">,
): Promise<Source> {
  const key = `${url ?? dataDir}#${name}`;
  let open = openSources.get(key);
  if (!open) {
    const source = (async () => {
      const db = await openDatabase({
        url,
        dataDir,
        poolMax: 4,
        label: "events",
        queryTimeoutMs: config.DATABASE_QUERY_TIMEOUT_MS,
        wait: { logger, maxMs: config.RETRY_BACKOFF_MAX_MS },
      });
      const src: Source = { key, name, db, wakers: new Set(), unlisten: async () => {}, present: false, notified: 0, reading: new Map() };
      src.unlisten = await db.listen(EVENTS_CHANNEL, (schema) => {
        if (schema !== name) return;
        src.notified++;
        for (const w of src.wakers) w();
      });
      return src;
    })();
    open = { refs: 0, source };
    openSources.set(key, open);
    const opened = open;
    source.catch(() => openSources.get(key) === opened && openSources.delete(key));
  }
  open.refs++;
  return open.source;
}

async function releaseSource(src: Source): Promise<void> {
  const open = openSources.get(src.key);
  if (open && --open.refs > 0) return;
  openSources.delete(src.key);
  await src.unlisten();
  await src.db.close();
}
