-- The relay stamps each published row with seq, in commit order: consumers of the postgres event
-- transport read "seq > cursor" and can never skip a row that committed late.
ALTER TABLE gateway.outbox ADD COLUMN seq bigint;
CREATE UNIQUE INDEX outbox_seq ON gateway.outbox (seq);
-- replay of one aggregate's events (SSE Last-Event-ID)
CREATE INDEX outbox_aggregate ON gateway.outbox (aggregate_id, id);

-- wakes the relay as soon as a row commits (it also polls)
CREATE FUNCTION gateway.outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('icv_outbox', TG_TABLE_SCHEMA);
  RETURN NULL;
END
$$;
CREATE TRIGGER outbox_notify AFTER INSERT ON gateway.outbox FOR EACH STATEMENT EXECUTE FUNCTION gateway.outbox_notify();
