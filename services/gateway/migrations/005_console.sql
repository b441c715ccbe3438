-- The tenant console (docs/console.md): a tenant's people, their passkeys, invites, sessions and
-- the audit log of what they did. Every row names its tenant; the console reads by it.
CREATE TABLE gateway.console_users (
  id text PRIMARY KEY,
  tenant_id text NOT NULL REFERENCES gateway.tenants (id),
  email text NOT NULL,
  role text NOT NULL CHECK (role IN ('admin', 'developer', 'viewer')),
  created_at timestamptz NOT NULL DEFAULT now(),
  -- a revoked user's sessions end at once (every request reads this)
  revoked_at timestamptz
);
CREATE UNIQUE INDEX console_users_email ON gateway.console_users (tenant_id, lower(email));

-- single use, 24 h; only the SHA-256 of the token is kept
CREATE TABLE gateway.console_invites (
  token_hash text PRIMARY KEY,
  user_id text NOT NULL REFERENCES gateway.console_users (id),
  tenant_id text NOT NULL,
  created_by text,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  used_at timestamptz
);
CREATE INDEX console_invites_user ON gateway.console_invites (user_id);

CREATE TABLE gateway.console_passkeys (
  -- the credential id (base64url)
  id text PRIMARY KEY,
  user_id text NOT NULL REFERENCES gateway.console_users (id),
  tenant_id text NOT NULL,
  public_key bytea NOT NULL,
  counter bigint NOT NULL,
  transports text[] NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL,
  last_used_at timestamptz
);
CREATE INDEX console_passkeys_user ON gateway.console_passkeys (user_id);

-- WebAuthn challenges: each answered once, within five minutes
CREATE TABLE gateway.console_challenges (
  challenge text PRIMARY KEY,
  purpose text NOT NULL CHECK (purpose IN ('register', 'sign_in')),
  -- the invite a registration answers (its token's hash)
  invite_hash text,
  expires_at timestamptz NOT NULL
);

-- only the SHA-256 of the session id (the cookie) is kept
CREATE TABLE gateway.console_sessions (
  id_hash text PRIMARY KEY,
  user_id text NOT NULL REFERENCES gateway.console_users (id),
  tenant_id text NOT NULL,
  created_at timestamptz NOT NULL,
  last_seen_at timestamptz NOT NULL,
  ended_at timestamptz,
  ip text,
  user_agent text
);
CREATE INDEX console_sessions_user ON gateway.console_sessions (user_id) WHERE ended_at IS NULL;

-- who did what, when and from where; rows are never changed or removed
CREATE TABLE gateway.console_audit (
  id text PRIMARY KEY,
  tenant_id text NOT NULL,
  environment text CHECK (environment IN ('live', 'test')),
  user_id text,
  email text,
  action text NOT NULL,
  target text,
  outcome text NOT NULL CHECK (outcome IN ('ok', 'denied', 'failed')),
  ip text,
  user_agent text,
  at timestamptz NOT NULL
);
CREATE INDEX console_audit_tenant ON gateway.console_audit (tenant_id, id DESC);

CREATE FUNCTION gateway.console_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'console_audit is append-only';
END
$$;
CREATE TRIGGER console_audit_append_only BEFORE UPDATE OR DELETE ON gateway.console_audit
  FOR EACH ROW EXECUTE FUNCTION gateway.console_audit_append_only();
