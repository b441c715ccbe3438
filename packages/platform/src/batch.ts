import { DatabaseError, type Database } from "./database.ts";
import { activeTraceparent } from "./tracing.ts";

/**
 * Group commit inside the process, for a write that takes one row per call (a verification's
 * insert, a proof's insert, a verification's completing update). Calls made in the same turn of
 * the event loop, and calls made while `lanes` statements of the same write are running, are
 * written together (up to `max` rows) in one statement: one round trip, one plan, one commit for
 * many rows. A call waits at most for the end of the loop's turn (setImmediate) before its
 * statement starts, unless every lane is busy; a call alone goes through the one-row statement.
 *
 * Why (issue 33, docs/performance.md): a one-row statement costs Postgres about 0.6 ms around its
 * row (protocol, executor start, commit, the outbox trigger's NOTIFY) and the process about
 * 0.3 ms; written 10 to 25 at a time, the same rows cost 0.08 and 0.03 ms each. On the embedded
 * database, which runs one statement at a time on the process's thread, a statement's own cost
 * is most of a proof's.
 *
 * Each call still gets its own answer, and every row still commits with its events in one
 * statement. When the database refused the batch's statement (a DatabaseError: its SQLSTATE
 * says the statement was rolled back, nothing of it stays), each of its calls runs again alone, so
 * one bad row fails only its own call. Any other failure (the connection lost, where the outcome
 * is unknown; the database away, DatabaseUnavailableError) fails every call of the batch, as it
 * would have failed each alone.
 *
 * `key`: calls with the same key never share a batch (a later one waits for the next), so a
 * batch statement meets each row once. A call made with a trace active runs alone: a batch's
 * events would not carry its traceparent.
 *
 * Lanes: two statements at once on Postgres, so one statement waiting for a row lock does not
 * hold up every write of its kind in the process; one on the embedded database, which runs one
 * statement at a time anyway.
 */
export function batched<In, Out>(
  db: Pick<Database, "kind">,
  o: { one: (item: In) => Promise<Out>; many: (items: In[]) => Promise<Out[]>; key: (item: In) => string; max?: number },
): (item: In) => Promise<Out> {
  const lanes = db.kind === "pg" ? 2 : 1;
  const max = o.max ?? 64;
  interface Call {
    item: In;
    resolve: (out: Out) => void;
    reject: (err: unknown) => void;
  }
  let queue: Call[] = [];
  let busy = 0;

  const take = (): Call[] => {
    if (queue.length === 1) return queue.splice(0, 1);
    const batch: Call[] = [];
    const rest: Call[] = [];
    const keys = new Set<string>();
    for (const c of queue) {
      const k = o.key(c.item);
      if (batch.length < max && !keys.has(k)) {
        keys.add(k);
        batch.push(c);
      } else rest.push(c);
    }
    queue = rest;
    return batch;
  };

  const alone = (c: Call) => o.one(c.item).then(c.resolve, c.reject);

  const run = async (batch: Call[]) => {
    busy++;
    try {
      if (batch.length === 1) return await alone(batch[0]);
      let out: Out[];
      try {
        out = await o.many(batch.map((c) => c.item));
      } catch (err) {
        if (!(err instanceof DatabaseError)) {
          for (const c of batch) c.reject(err);
          return;
        }
        await Promise.all(batch.map(alone));
        return;
      }
      batch.forEach((c, i) => {
        c.resolve(out[i]);
      });
    } finally {
      busy--;
      pump();
    }
  };

  const pump = () => {
    while (busy < lanes && queue.length) void run(take());
  };
  let scheduled = false;
  const pumpSoon = () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      pump();
    });
  };

  return (item) =>
    activeTraceparent()
      ? o.one(item)
      : new Promise<Out>((resolve, reject) => {
          queue.push({ item, resolve, reject });
          pumpSoon();
        });
}

/**
 * Rows of a statement's values as one text array per column, for a batch statement's unnest()
 * (each element cast to its column's type there; both drivers send text arrays alike): dates as
 * ISO strings, objects as JSON, nulls kept.
 */
export function textColumns(rows: unknown[][]): (string | null)[][] {
  const columns: (string | null)[][] = rows[0].map(() => []);
  for (const row of rows)
    row.forEach((v, i) => {
      columns[i].push(v === null || v === undefined ? null : v instanceof Date ? v.toISOString() : typeof v === "object" ? JSON.stringify(v) : String(v));
    });
  return columns;
}

/**
 * The latest of a batch's times: the time its events are written at (their outbox `created_at`
 * and id). Each row's own time is later than every earlier event of its aggregate, so the latest
 * keeps every aggregate's events in order (the relay publishes by `created_at`, then id).
 */
export const latest = (times: Date[]): Date => new Date(Math.max(...times.map((t) => t.getTime())));
