-- Redaction and retention (issue 35, docs/privacy.md). A redacted verification keeps its id, type,
-- channel, status, dates and redacted_at; its identifier, instruction and canonical form are
-- emptied, client_metadata, challenge message, deep link and blind index cleared. Its
-- external_user_id is replaced by external_user_index (its blind index), so a later user-wide
-- redaction or export still finds it without holding the id. redacted_revoked: a redaction revoked its proof.
ALTER TABLE verification.verifications ADD COLUMN redacted_at timestamptz;
ALTER TABLE verification.verifications ADD COLUMN external_user_index text;
ALTER TABLE verification.verifications ADD COLUMN redacted_revoked boolean NOT NULL DEFAULT false;
CREATE INDEX verifications_external_user_index ON verification.verifications (tenant_id, environment, external_user_index)
  WHERE external_user_index IS NOT NULL;
-- the retention sweeper reads settled rows not yet redacted, oldest first, per scope
CREATE INDEX verifications_retention ON verification.verifications (tenant_id, environment, created_at)
  WHERE redacted_at IS NULL AND status <> 'pending';

-- A tenant environment's retention (tenant set --retention-days, the console): settled
-- verifications created more than `days` days ago are redacted by the retention sweeper.
CREATE TABLE verification.retention (
  tenant_id text NOT NULL,
  environment text NOT NULL CHECK (environment IN ('live', 'test')),
  days integer NOT NULL CHECK (days BETWEEN 1 AND 3650),
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, environment)
);
