-- OAuth 2.0 sign-ins in flight (social channels, coinbase): one row per start, spent by its
-- callback (deleted as it is read) or swept once expired. Only the SHA-256 of the `state` is kept;
-- the PKCE verifier and the OIDC nonce are derived from the state with the service's HMAC key, so
-- no secret of the flow is stored. The sign-in link itself is the verification's code HMAC.
CREATE TABLE verification.oauth_states (
  state_hash text PRIMARY KEY,
  tenant_id text NOT NULL,
  environment text NOT NULL CHECK (environment IN ('live', 'test')),
  verification_id text NOT NULL,
  channel text NOT NULL,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX oauth_states_expires ON verification.oauth_states (expires_at);
