-- Test mode (GET /api/v1/test/messages): the messages a test verification would have sent (the
-- code email, outbound) or expects from the user (the phone code message, inbound). Written only
-- for environment 'test', in the transaction that stores the verification (or its resent code).
-- Rows older than 7 days are pruned for the tenant on each write (store.ts).
CREATE TABLE verification.test_messages (
  id text PRIMARY KEY,
  tenant_id text NOT NULL,
  environment text NOT NULL CHECK (environment = 'test'),
  verification_id text NOT NULL,
  channel text NOT NULL,
  direction text NOT NULL CHECK (direction IN ('outbound', 'inbound')),
  from_address text,
  to_address text NOT NULL,
  subject text,
  body text NOT NULL,
  created_at timestamptz NOT NULL
);

CREATE INDEX test_messages_scope ON verification.test_messages (tenant_id, environment, created_at DESC, id DESC);
CREATE INDEX test_messages_verification ON verification.test_messages (verification_id);
