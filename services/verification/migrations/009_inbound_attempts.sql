-- Wrong-sender attempts made by provider messages, by the message's key (provider + message id):
-- a message handled again after a crash (the provider retried it) does not count twice.
-- Rows older than 7 days are pruned (providers stop retrying long before).
CREATE TABLE verification.inbound_attempts (
  message_key text PRIMARY KEY,
  verification_id text NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX inbound_attempts_created ON verification.inbound_attempts (created_at);
