-- The transactional outbox of one service schema ({{schema}} is replaced by it): every state change
-- writes its events here in the same transaction, and the relay publishes them. openServiceDatabase
-- applies this file after the service's own migrations for a service opened with { outbox: true },
-- and records it in the schema's schema_migrations (version "outbox"), like any released migration.
-- Every statement is a no-op over what the first services' migrations already made
-- (001_init.sql and 002_outbox_relay.sql), so existing schemas take it cleanly and new ones end up
-- the same.
CREATE TABLE IF NOT EXISTS {{schema}}.outbox (
  id text PRIMARY KEY,
  aggregate_type text NOT NULL,
  aggregate_id text NOT NULL,
  event_type text NOT NULL,
  tenant_id text NOT NULL,
  environment text NOT NULL CHECK (environment IN ('live', 'test')),
  payload jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  published_at timestamptz,
  -- stamped by the relay in commit order: consumers of the postgres event transport read
  -- "seq > cursor" and can never skip a row that committed late
  seq bigint
);
CREATE INDEX IF NOT EXISTS outbox_unpublished ON {{schema}}.outbox (created_at) WHERE published_at IS NULL;
CREATE UNIQUE INDEX IF NOT EXISTS outbox_seq ON {{schema}}.outbox (seq);
-- replay of one aggregate's events (SSE Last-Event-ID)
CREATE INDEX IF NOT EXISTS outbox_aggregate ON {{schema}}.outbox (aggregate_id, id);

-- wakes the relay as soon as a row commits (it also polls)
CREATE OR REPLACE FUNCTION {{schema}}.outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('icv_outbox', TG_TABLE_SCHEMA);
  RETURN NULL;
END
$$;
-- (CREATE OR REPLACE TRIGGER needs Postgres 14; the chart supports 13)
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'outbox_notify' AND tgrelid = '{{schema}}.outbox'::regclass) THEN
    CREATE TRIGGER outbox_notify AFTER INSERT ON {{schema}}.outbox FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.outbox_notify();
  END IF;
END
$$;
