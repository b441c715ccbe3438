-- Profiles: a tenant's public pages of verified assets (/api/v1/me/profiles, /p/{id}).
-- proofs: [{verification_id, label, mask_level, display_order}] (at most 50), each a verified
-- verification of the same tenant and environment when it was listed; the page re-checks them.
CREATE TABLE verification.profiles (
  id text PRIMARY KEY,
  tenant_id text NOT NULL,
  environment text NOT NULL CHECK (environment IN ('live', 'test')),
  display_name text NOT NULL,
  bio text,
  avatar_url text,
  is_public boolean NOT NULL DEFAULT false,
  proofs jsonb NOT NULL DEFAULT '[]',
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE INDEX profiles_scope ON verification.profiles (tenant_id, environment, created_at DESC, id DESC);
