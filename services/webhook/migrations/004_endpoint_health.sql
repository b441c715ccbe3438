-- Endpoint health: failing_since is when the current streak of failed attempts to a tenant's
-- endpoint began (NULL while the last attempt succeeded); an endpoint failing for
-- WEBHOOK_DISABLE_AFTER_MS (default 5 days) is disabled and gets no deliveries until an operator
-- enables it again (admin CLI: webhook enable).
ALTER TABLE webhook.endpoints ADD COLUMN failing_since timestamptz;
ALTER TABLE webhook.endpoints ADD COLUMN disabled_at timestamptz;
ALTER TABLE webhook.endpoints ADD COLUMN disabled_reason text;
