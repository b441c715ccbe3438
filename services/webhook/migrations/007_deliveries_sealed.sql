-- Issue 35 (docs/privacy.md): a delivery's stored body is sealed under the data key; key_version
-- names the version that sealed it (NULL: stored before sealing, sealed by the background pass).
ALTER TABLE webhook.deliveries ADD COLUMN key_version integer;
