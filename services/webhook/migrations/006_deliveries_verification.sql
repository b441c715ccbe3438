-- Issue 35 (docs/privacy.md): a verification's deliveries are found by its id, to null the personal
-- parts of their stored payloads when it is redacted and to list them in a data-subject export.
CREATE INDEX deliveries_verification ON webhook.deliveries (tenant_id, environment, verification_id) WHERE verification_id IS NOT NULL;
