-- The traceparent of the event a delivery was made for (tracing on; NULL otherwise): each attempt's
-- POST is a span in the trace of the request that caused the event.
ALTER TABLE webhook.deliveries ADD COLUMN traceparent text;
