CREATE TABLE proof.signing_keys (
  kid text PRIMARY KEY,
  public_jwk jsonb NOT NULL,
  -- AES-256-GCM under the key-encryption key: base64(iv || tag || ciphertext), kid as AAD
  private_key_enc text NOT NULL,
  status text NOT NULL CHECK (status IN ('active', 'retired')),
  created_at timestamptz NOT NULL DEFAULT now(),
  retired_at timestamptz
);
CREATE UNIQUE INDEX signing_keys_one_active ON proof.signing_keys (status) WHERE status = 'active';

CREATE TABLE proof.proofs (
  id text PRIMARY KEY,
  tenant_id text NOT NULL,
  environment text NOT NULL CHECK (environment IN ('live', 'test')),
  kid text NOT NULL REFERENCES proof.signing_keys (kid),
  type text NOT NULL,
  channel text NOT NULL,
  identifier_hash text NOT NULL,
  external_user_id text,
  token text NOT NULL,
  verified_at timestamptz NOT NULL,
  issued_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz,
  revoked_reason text
);
CREATE INDEX proofs_kid_expiry ON proof.proofs (kid, expires_at);
CREATE INDEX proofs_revoked ON proof.proofs (revoked_at) WHERE revoked_at IS NOT NULL;

CREATE TABLE proof.outbox (
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
CREATE INDEX outbox_unpublished ON proof.outbox (created_at) WHERE published_at IS NULL;
