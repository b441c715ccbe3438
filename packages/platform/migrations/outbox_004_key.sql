-- The outbox's key is (aggregate_id, id) (docs/performance.md, issue 33). The index that replays
-- one aggregate's events (SSE Last-Event-ID) becomes the primary key, and the index on id alone
-- goes: an event used to be written into four indexes and stamped into three, now three and two.
-- Event ids are made by the writer (newId, 80 random bits), so they stay unique in practice; the key
-- still refuses a repeated (aggregate, id). What looked a row up by id alone now names its
-- aggregate too: the relay's stamp below, and the Kafka publisher's mark (relay.ts).
CREATE UNIQUE INDEX IF NOT EXISTS outbox_key ON {{schema}}.outbox (aggregate_id, id);
ALTER TABLE {{schema}}.outbox DROP CONSTRAINT IF EXISTS outbox_pkey;
ALTER TABLE {{schema}}.outbox ADD CONSTRAINT outbox_pkey PRIMARY KEY USING INDEX outbox_key;
DROP INDEX IF EXISTS {{schema}}.outbox_aggregate;

-- outbox_003's stamp, its rows found by the key
CREATE OR REPLACE FUNCTION {{schema}}.outbox_stamp(source text, batch_size integer, events_channel text, traced boolean)
  RETURNS TABLE (stamped_count integer, stamped_traces text[]) LANGUAGE plpgsql AS $$
BEGIN
  stamped_count := 0;
  IF pg_try_advisory_xact_lock(hashtext('icv-outbox-relay:' || source)) THEN
    WITH batch AS (
      SELECT o.aggregate_id, o.id, row_number() OVER (ORDER BY o.created_at, o.id) AS k FROM {{schema}}.outbox o
       WHERE o.published_at IS NULL ORDER BY o.created_at, o.id LIMIT batch_size),
    base AS (SELECT coalesce(max(o.seq), 0) AS m FROM {{schema}}.outbox o),
    stamped AS (
      UPDATE {{schema}}.outbox o SET seq = base.m + batch.k, published_at = now() FROM batch, base
       WHERE o.aggregate_id = batch.aggregate_id AND o.id = batch.id RETURNING o.traceparent)
    SELECT count(*)::int, CASE WHEN traced THEN array_agg(DISTINCT s.traceparent) FILTER (WHERE s.traceparent IS NOT NULL) END
      INTO stamped_count, stamped_traces FROM stamped s;
    IF stamped_count > 0 THEN
      PERFORM pg_notify(events_channel, source);
    END IF;
  END IF;
  RETURN NEXT;
END
$$;
