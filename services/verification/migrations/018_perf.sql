-- Housekeeping moved off the request path: the sweeper deletes test messages past their 7 days
-- for every tenant at once (it used to be a DELETE per tenant on every create).
CREATE INDEX IF NOT EXISTS test_messages_created ON verification.test_messages (created_at);
