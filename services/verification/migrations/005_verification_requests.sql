-- Verification requests: several assets bundled for one end user, completed on the hosted page
-- or through the API. The request's status is derived from its assets' verifications.
CREATE TABLE verification.verification_requests (
  id text PRIMARY KEY,
  tenant_id text NOT NULL,
  environment text NOT NULL CHECK (environment IN ('live', 'test')),
  status text NOT NULL CHECK (status IN ('pending', 'partial', 'completed', 'expired', 'cancelled')),
  reference_id text,
  action_type text NOT NULL,
  action_title text,
  action_description text,
  redirect_url text,
  callback_url text,
  partial_ok boolean NOT NULL,
  external_user_id text,
  client_metadata jsonb,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  completed_at timestamptz,
  cancelled_at timestamptz
);
CREATE INDEX verification_requests_tenant_created ON verification.verification_requests (tenant_id, environment, created_at DESC, id DESC);
CREATE INDEX verification_requests_reference ON verification.verification_requests (tenant_id, environment, reference_id, created_at DESC) WHERE reference_id IS NOT NULL;
CREATE INDEX verification_requests_open_expiry ON verification.verification_requests (expires_at) WHERE status IN ('pending', 'partial');

CREATE TABLE verification.verification_request_assets (
  request_id text NOT NULL REFERENCES verification.verification_requests (id) ON DELETE CASCADE,
  idx integer NOT NULL,
  type text NOT NULL,
  identifier text,
  channel text,
  allowed_channels text[],
  required boolean NOT NULL,
  status text NOT NULL CHECK (status IN ('pending', 'in_progress', 'verified', 'failed', 'expired')),
  verification_id text,
  PRIMARY KEY (request_id, idx)
);
-- the event consumer finds a verification's asset by its id
CREATE INDEX verification_request_assets_verification ON verification.verification_request_assets (verification_id) WHERE verification_id IS NOT NULL;

-- The request consumer (verification events → request state) records what it applied, like every
-- consumer of the event log (see the platform's events/consumer.ts).
CREATE TABLE verification.event_consumed (
  consumer text NOT NULL,
  event_id text NOT NULL,
  consumed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer, event_id)
);
CREATE INDEX event_consumed_age ON verification.event_consumed (consumed_at);
CREATE TABLE verification.event_cursors (
  consumer text NOT NULL,
  source text NOT NULL,
  position bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (consumer, source)
);
