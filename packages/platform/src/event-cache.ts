import type { EventLog, EventRecord, Subscription } from "./events/event-log.ts";

/**
 * Rows kept in memory by id, dropped by the events their changes emit: a change made in this
 * process drops its row at once (`drop` after the write), one made by another worker or replica
 * when its event arrives (`follow`). So a read is stale for at most the event delay.
 *
 * Only rows whose every later change emits an event may be cached (the caller decides with
 * `cacheable`). A read that started before a drop of its id never stores what it read (it may
 * have read the row as it was before the change): each drop bumps a generation, and `load` stores
 * only when no drop of its id (or too many drops to remember) happened since it began.
 * Bounded: at most `max` rows, least recently used go first.
 */
export class EventCache<V> {
  private readonly rows = new Map<string, V>();
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
  ) {}

  /** The row from memory, else from `read` (stored when cacheable and no drop raced with it). */
  async load(id: string, read: () => Promise<V | undefined>): Promise<V | undefined> {
    const hit = this.rows.get(id);
    if (hit !== undefined) {
      this.hits++;
      this.rows.delete(id);
      this.rows.set(id, hit);
      return hit;
    }
    this.misses++;
    const began = this.generation;
    const v = await read();
    if (v === undefined || !this.cacheable(v)) return v;
    if ((this.drops.get(id) ?? 0) > began || this.forgotten > began) return v;
    if (this.rows.size >= this.max) this.rows.delete(this.rows.keys().next().value!);
    this.rows.set(id, v);
    return v;
  }

  /** Forgets a row that changed (or may have). */
  drop(id: string): void {
    this.rows.delete(id);
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

  /** Drops the aggregate of every event of `topics` as it is published (this process's and every other's). */
  follow(events: EventLog, topics: string[], idOf: (e: EventRecord) => string = (e) => e.aggregateId): Promise<Subscription> {
    return events.broadcast({ topics, name: `${topics.join(",")} cache`, onEvent: (e) => this.drop(idOf(e)) });
  }
}
