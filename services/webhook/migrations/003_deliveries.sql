-- New secrets are whsec_ + standard base64 of 32 random bytes (what Standard Webhooks libraries
-- decode); the first ones were base64url, and signing decodes either.
-- Rotation keeps the secret it replaced signing alongside the new one until previous_expires_at.
ALTER TABLE webhook.secrets ADD COLUMN previous_secret text;
ALTER TABLE webhook.secrets ADD COLUMN previous_expires_at timestamptz;

-- A tenant's webhook URL per environment: every webhook event of that tenant and environment.
CREATE TABLE webhook.endpoints (
  tenant_id text NOT NULL,
  environment text NOT NULL CHECK (environment IN ('live', 'test')),
  url text NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, environment)
);

-- One event to one URL. payload is the exact body sent (and signed) on every attempt.
CREATE TABLE webhook.deliveries (
  id text PRIMARY KEY,
  tenant_id text NOT NULL,
  environment text NOT NULL CHECK (environment IN ('live', 'test')),
  event_id text NOT NULL,
  event_type text NOT NULL,
  url text NOT NULL,
  verification_request_id text,
  verification_id text,
  payload text NOT NULL,
  request_headers jsonb NOT NULL DEFAULT '{}',
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts int NOT NULL DEFAULT 0,
  max_attempts int NOT NULL,
  response_status int,
  response_body text,
  error_message text,
  -- [{attempt, at, status?, error?, duration_ms}]
  attempt_log jsonb NOT NULL DEFAULT '[]',
  -- when the next attempt is due (pending only)
  next_retry_at timestamptz,
  last_attempt_at timestamptz,
  -- a sender holds the row until lease_until (longer than the request timeout): a crash mid-send
  -- leaves the lease to expire and the row is sent again; lease_token guards the result write
  lease_until timestamptz,
  lease_token text,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  UNIQUE (event_id, url)
);
CREATE INDEX deliveries_due ON webhook.deliveries (next_retry_at) WHERE status = 'pending';
CREATE INDEX deliveries_scope ON webhook.deliveries (tenant_id, environment, created_at DESC, id DESC);
CREATE INDEX deliveries_request ON webhook.deliveries (tenant_id, environment, verification_request_id) WHERE verification_request_id IS NOT NULL;
