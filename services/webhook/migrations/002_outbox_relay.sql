-- The relay stamps each published row with seq, in commit order: consumers of the postgres event
-- transport read "seq > cursor" and can never skip a row that committed late.
ALTER TABLE webhook.outbox ADD COLUMN seq bigint;
CREATE UNIQUE INDEX outbox_seq ON webhook.outbox (seq);
-- replay of one aggregate's events (SSE Last-Event-ID)
CREATE INDEX outbox_aggregate ON webhook.outbox (aggregate_id, id);

-- wakes the relay as soon as a row commits (it also polls)
CREATE FUNCTION webhook.outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('icv_outbox', TG_TABLE_SCHEMA);
  RETURN NULL;
END
$$;
CREATE TRIGGER outbox_notify AFTER INSERT ON webhook.outbox FOR EACH STATEMENT EXECUTE FUNCTION webhook.outbox_notify();

-- An event consumer's own state: the ids it has applied (written in the same transaction as its
-- effects, so a redelivered event is skipped) and, for the postgres transport, its position in
-- each source's outbox.
CREATE TABLE webhook.event_consumed (
  consumer text NOT NULL,
  event_id text NOT NULL,
  consumed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer, event_id)
);
CREATE INDEX event_consumed_age ON webhook.event_consumed (consumed_at);
CREATE TABLE webhook.event_cursors (
  consumer text NOT NULL,
  source text NOT NULL,
  position bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (consumer, source)
);
