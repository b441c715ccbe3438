-- seq is NULL until the relay stamps it (always, on the Kafka transport). The unique index on it
-- now holds stamped rows only: writing an event no longer adds a NULL entry to it, one index write
-- less per event (docs/performance.md). The followers' "seq > $1 ORDER BY seq" and the relay's
-- max(seq) imply seq IS NOT NULL, so they read this index as they read the old one.
CREATE UNIQUE INDEX IF NOT EXISTS outbox_seq_stamped ON {{schema}}.outbox (seq) WHERE seq IS NOT NULL;
DROP INDEX IF EXISTS {{schema}}.outbox_seq;
