-- Domain verifications: what a check needs and what it saw, one row per domain verification
-- (channels dns, http and auto; email ones keep only their mailbox prefix). The token is public
-- (it is what the user publishes); provider credentials (channel auto) are never stored.
CREATE TABLE verification.domain_checks (
  verification_id text PRIMARY KEY REFERENCES verification.verifications (id) ON DELETE CASCADE,
  tenant_id text NOT NULL,
  environment text NOT NULL CHECK (environment IN ('live', 'test')),
  -- 32 random bytes, base64url: the record is `icv-verify={token}`; null on channel email
  token text,
  -- channel email: the mailbox at the domain the code goes to
  email_prefix text,
  -- the DNS host named by the NS records at create (POST /verifications/domain)
  provider_detected text,
  provider_name text,
  -- every check counts; one per 5 s per verification (claimed by a conditional UPDATE on last_checked_at)
  check_count integer NOT NULL DEFAULT 0,
  last_checked_at timestamptz,
  -- what the last check saw: {passed, summary, checked_at, observations: [{source, found, error, matched}]}
  last_check jsonb
);
