-- The W3C traceparent of the span that wrote an event (tracing on; NULL otherwise): the relay and
-- the consumers continue the request's trace from it. Applied after outbox.sql in every service
-- schema that holds an outbox, and recorded as version "outbox_002" (outbox.sql is released: it
-- is never edited, the outbox changes by a file like this one).
ALTER TABLE {{schema}}.outbox ADD COLUMN IF NOT EXISTS traceparent text;
