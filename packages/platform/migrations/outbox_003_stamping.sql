-- Stamping in one statement (docs/performance.md, issue 33).
--
-- seq is NULL until the relay stamps it (always, on the Kafka transport). The unique index on it
-- now holds stamped rows only: writing an event no longer adds a NULL entry to it, one index write
-- less per event. The followers' "seq > $1 ORDER BY seq" and the relay's max(seq) imply
-- seq IS NOT NULL, so they read this index as they read the old one.
CREATE UNIQUE INDEX IF NOT EXISTS outbox_seq_stamped ON {{schema}}.outbox (seq) WHERE seq IS NOT NULL;
DROP INDEX IF EXISTS {{schema}}.outbox_seq;

-- One run of the postgres transport's relay: with the schema's relay lock (one replica at a time;
-- another replica's run answers 0), stamps up to batch_size unpublished rows with the next seqs in
-- created order and NOTIFYs the followers (sent at commit). A plain statement, so a run is one round
-- trip instead of four (BEGIN, the lock, the stamp, COMMIT). The stamp starts after the lock is
-- won, and in a VOLATILE function each statement reads with a snapshot of its own: it sees every
-- stamp of the replica that held the lock before.
-- source: this schema's name (the lock's and the NOTIFY's); traced: also answer the batch's
-- traceparents (the relay's span).
CREATE OR REPLACE FUNCTION {{schema}}.outbox_stamp(source text, batch_size integer, events_channel text, traced boolean)
  RETURNS TABLE (stamped_count integer, stamped_traces text[]) LANGUAGE plpgsql AS $$
BEGIN
  stamped_count := 0;
  IF pg_try_advisory_xact_lock(hashtext('icv-outbox-relay:' || source)) THEN
    WITH batch AS (
      SELECT o.id, row_number() OVER (ORDER BY o.created_at, o.id) AS k FROM {{schema}}.outbox o
       WHERE o.published_at IS NULL ORDER BY o.created_at, o.id LIMIT batch_size),
    base AS (SELECT coalesce(max(o.seq), 0) AS m FROM {{schema}}.outbox o),
    stamped AS (
      UPDATE {{schema}}.outbox o SET seq = base.m + batch.k, published_at = now() FROM batch, base
       WHERE o.id = batch.id RETURNING o.traceparent)
    SELECT count(*)::int, CASE WHEN traced THEN array_agg(DISTINCT s.traceparent) FILTER (WHERE s.traceparent IS NOT NULL) END
      INTO stamped_count, stamped_traces FROM stamped s;
    IF stamped_count > 0 THEN
      PERFORM pg_notify(events_channel, source);
    END IF;
  END IF;
  RETURN NEXT;
END
$$;
