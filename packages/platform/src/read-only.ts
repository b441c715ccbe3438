// Which statements may be abandoned when Postgres leaves them unanswered (DATABASE_QUERY_TIMEOUT_MS, database.ts).
/**
 * Whether a statement only reads. Only those are abandoned when the server leaves them unanswered
 * (DATABASE_QUERY_TIMEOUT_MS). A statement that may have changed data, out of a transaction or a
 * transaction's COMMIT, waits for its answer: abandoned, its outcome would be unknown, and the
 * caller's retry could do it twice. Unsure is a write, and so is a call of a schema-qualified
 * function (ours, such as `outbox_stamp`, write).
 */
const WRITES = /\b(INSERT|UPDATE|DELETE|MERGE|TRUNCATE|COPY|CALL|CREATE|DROP|ALTER|GRANT|NOTIFY|LOCK|nextval|setval|pg_notify|\w*advisory\w*)\b|\w\.\w+\s*\(/i;
const reads = new Map<string, boolean>();
export const onlyReads = (text: string): boolean => {
  let r = reads.get(text);
  if (r === undefined) {
    r = /^\s*(SELECT|WITH|VALUES|TABLE|SHOW)\b/i.test(text) && !WRITES.test(text);
    if (reads.size < 10_000) reads.set(text, r);
  }
  return r;
};
