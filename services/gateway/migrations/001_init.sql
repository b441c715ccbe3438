CREATE TABLE gateway.tenants (
  id text PRIMARY KEY,
  name text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE gateway.api_keys (
  id text PRIMARY KEY,
  tenant_id text NOT NULL REFERENCES gateway.tenants (id),
  environment text NOT NULL CHECK (environment IN ('live', 'test')),
  -- SHA-256 of the whole key; the key itself is shown once and never stored
  key_hash text NOT NULL UNIQUE,
  -- first characters, to tell keys apart in listings (e.g. pk_test_AbC1)
  key_prefix text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz
);
CREATE INDEX api_keys_tenant ON gateway.api_keys (tenant_id);

CREATE TABLE gateway.idempotency_keys (
  tenant_id text NOT NULL,
  environment text NOT NULL,
  key text NOT NULL,
  method text NOT NULL,
  path text NOT NULL,
  body_hash text NOT NULL,
  status_code integer,
  response_body jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, environment, key)
);
CREATE INDEX idempotency_keys_created ON gateway.idempotency_keys (created_at);

CREATE TABLE gateway.outbox (
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
CREATE INDEX outbox_unpublished ON gateway.outbox (created_at) WHERE published_at IS NULL;
