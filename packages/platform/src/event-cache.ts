import type { EventLog, EventRecord, Subscription } from "./events/event-log.ts";

/**
 * A bounded map that forgets the least recently used entries first, approximately ("second
 * chance"): a hit only marks its entry used; when room is needed the oldest entry goes unless it
 * was used since it was last looked at, in which case it moves to the back with its mark cleared.
 * So a hit never changes the map: moving an entry on every hit (delete, then set again) cost V8
 * (Node 20) 25–150 µs per read when the same few keys were read again and again in a map of
 * 10,000, the usual shape of a hot read.
 */
export class BoundedMap<K, V> {
  private readonly entries = new Map<K, { v: V; used: boolean }>();

  constructor(readonly max: number) {}

  get(k: K): V | undefined {
    const e = this.entries.get(k);
    if (!e) return undefined;
    e.used = true;
    return e.v;
  }

  set(k: K, v: V): void {
    const e = this.entries.get(k);
    if (e) {
      e.v = v;
      e.used = true;
      return;
    }
    // each pass removes an entry or clears a mark, so this ends within two rounds of the map
    while (this.entries.size >= this.max) {
      const [oldest, o] = this.entries.entries().next().value!;
      this.entries.delete(oldest);
      if (!o.used) break;
      o.used = false;
      this.entries.set(oldest, o);
    }
    this.entries.set(k, { v, used: false });
  }

  delete(k: K): boolean {
    return this.entries.delete(k);
  }

  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}

/**
 * Rows kept in memory by id, dropped by the events their changes emit: a change made in this
 * process drops its row at once (`drop` after the write), one made by another worker or replica
 * when its event arrives (`follow`). So a read is stale for at most the event delay.
 *
 * Only rows whose every later change emits an event may be cached (the caller decides with
 * `cacheable`). A read that started before a drop of its id never stores what it read (it may
 * have read the row as it was before the change): each drop bumps a generation, and `load` stores
 * only when no drop of its id (or too many drops to remember) happened since it began.
 * Bounded: at most `max` rows, least recently used go first (BoundedMap).
 */
export class EventCache<V> {
  private readonly rows: BoundedMap<string, V>;
  private generation = 0;
  /** id → generation of its last drop; the oldest are forgotten past `max` */
  private readonly drops = new Map<string, number>();
  /** the highest generation among forgotten drops: a read older than it stores nothing */
  private forgotten = 0;
  hits = 0;
  misses = 0;

  constructor(
    private readonly cacheable: (v: V) => boolean,
    private readonly max = 10_000,
    /** told of every drop, for what else the owner keeps of the row */
    private readonly onDrop?: (id: string) => void,
  ) {
    this.rows = new BoundedMap(max);
  }

  /** The row from memory, else from `read` (stored when cacheable and no drop raced with it). */
  async load(id: string, read: () => Promise<V | undefined>): Promise<V | undefined> {
    const hit = this.rows.get(id);
    if (hit !== undefined) {
      this.hits++;
      return hit;
    }
    this.misses++;
    const began = this.generation;
    const v = await read();
    if (v === undefined || !this.cacheable(v)) return v;
    if ((this.drops.get(id) ?? 0) > began || this.forgotten > began) return v;
    this.rows.set(id, v);
    return v;
  }

  /** Forgets a row that changed (or may have). */
  drop(id: string): void {
    this.rows.delete(id);
    this.onDrop?.(id);
    this.generation++;
    this.drops.delete(id);
    this.drops.set(id, this.generation);
    if (this.drops.size > this.max) {
      const [oldest, gen] = this.drops.entries().next().value!;
      this.drops.delete(oldest);
      this.forgotten = gen;
    }
  }

  get size(): number {
    return this.rows.size;
  }

  /**
   * Drops the aggregate of every event of `topics` as it is published (this process's and every
   * other's), but of those `unchanged` says leave every row the owner keeps as it was.
   */
  follow(events: EventLog, topics: string[], unchanged: (e: EventRecord) => boolean = () => false): Promise<Subscription> {
    return events.broadcast({ topics, name: `${topics.join(",")} cache`, onEvent: (e) => unchanged(e) || this.drop(e.aggregateId) });
  }
}
