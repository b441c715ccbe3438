CREATE TABLE webhook.secrets (
  tenant_id text NOT NULL,
  environment text NOT NULL CHECK (environment IN ('live', 'test')),
  -- whsec_ + 32 random bytes (base64url); kept retrievable because every delivery is signed with it
  secret text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, environment)
);

CREATE TABLE webhook.outbox (
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
CREATE INDEX outbox_unpublished ON webhook.outbox (created_at) WHERE published_at IS NULL;
