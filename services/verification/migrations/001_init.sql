CREATE TABLE verification.verifications (
  id text PRIMARY KEY,
  tenant_id text NOT NULL,
  environment text NOT NULL CHECK (environment IN ('live', 'test')),
  type text NOT NULL,
  channel text NOT NULL,
  -- normalized identifier as displayed, and the form hashed into the proof and compared
  identifier text NOT NULL,
  identifier_canonical text NOT NULL,
  status text NOT NULL CHECK (status IN ('pending', 'verified', 'failed', 'expired', 'revoked')),
  -- HMAC-SHA256 of the challenge code; the code itself is never stored
  code_hmac text,
  challenge_expires_at timestamptz NOT NULL,
  instruction text NOT NULL,
  deep_link text,
  challenge_message text,
  attempts integer NOT NULL DEFAULT 0,
  max_attempts integer NOT NULL DEFAULT 5,
  client_metadata jsonb,
  external_user_id text,
  proof_expires_in integer NOT NULL,
  proof_token text,
  proof_expires_at timestamptz,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  verified_at timestamptz,
  revoked_at timestamptz,
  revoked_reason text
);
CREATE INDEX verifications_tenant_created ON verification.verifications (tenant_id, environment, created_at DESC, id DESC);
CREATE INDEX verifications_pending_expiry ON verification.verifications (challenge_expires_at) WHERE status = 'pending';
CREATE INDEX verifications_external_user ON verification.verifications (tenant_id, environment, external_user_id, created_at DESC) WHERE external_user_id IS NOT NULL;

CREATE TABLE verification.outbox (
  id text PRIMARY KEY,
  aggregate_type text NOT NULL,
  aggregate_id text NOT NULL,
  event_type text NOT NULL,
  tenant_id text NOT NULL,
  environment text NOT NULL CHECK (environment IN ('live', 'test')),
  payload jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  published_at timestamptz
);
CREATE INDEX outbox_unpublished ON verification.outbox (created_at) WHERE published_at IS NULL;
