-- Projects (DECISIONS.md, the /api/v1/me families): a tenant environment's branding and default
-- callbacks. One default project per tenant environment, made on first use (the partial unique
-- index keeps it one even when two first uses race).
CREATE TABLE verification.projects (
  id text PRIMARY KEY,
  tenant_id text NOT NULL,
  environment text NOT NULL CHECK (environment IN ('live', 'test')),
  name text NOT NULL,
  description text,
  business_name text,
  logo_url text,
  primary_color text,
  support_email text,
  success_url text,
  failure_url text,
  cancel_url text,
  is_default boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL
);
CREATE INDEX projects_scope ON verification.projects (tenant_id, environment, created_at);
CREATE UNIQUE INDEX projects_one_default ON verification.projects (tenant_id, environment) WHERE is_default;

-- Message templates per project, channel and type; a missing row means the built-in text.
-- Deleted with their project.
CREATE TABLE verification.message_templates (
  project_id text NOT NULL REFERENCES verification.projects (id) ON DELETE CASCADE,
  channel text NOT NULL CHECK (channel IN ('email', 'sms', 'whatsapp', 'telegram')),
  type text NOT NULL,
  body text NOT NULL,
  subject text,
  button_text text,
  is_active boolean NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (project_id, channel, type)
);

-- The project a verification's and a request's messages and page use (NULL: the default project).
ALTER TABLE verification.verifications ADD COLUMN project_id text;
-- Which template type its code messages use: verification_request, or login_request / 2fa_request for
-- a verification made for a request of that action_type (NULL: verification_request).
ALTER TABLE verification.verifications ADD COLUMN message_type text;
ALTER TABLE verification.verification_requests ADD COLUMN project_id text;
