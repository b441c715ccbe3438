-- Personal data at rest (issue 35, docs/privacy.md): identifiers, client_metadata, stored message
-- texts and destinations are sealed (AES-256-GCM, `pd1.<version>.…`) in their own columns;
-- key_version names the DATA_ENCRYPTION_KEY version that sealed a row (NULL: written before
-- sealing, sealed in the background by the personal-data sweeper). identifier_index is the blind
-- index (HMAC-SHA256 under DATA_BLIND_INDEX_KEY) that lookups by identifier compare (reuse reads a
-- user's verifications by external_user_id first, so it needs no index of its own).
ALTER TABLE verification.verifications ADD COLUMN key_version integer;
ALTER TABLE verification.verifications ADD COLUMN identifier_index text;
CREATE INDEX verifications_unsealed ON verification.verifications (id) WHERE key_version IS NULL;
CREATE INDEX verifications_key_version ON verification.verifications (key_version);
ALTER TABLE verification.verification_requests ADD COLUMN key_version integer;
CREATE INDEX verification_requests_unsealed ON verification.verification_requests (id) WHERE key_version IS NULL;
CREATE INDEX verification_requests_key_version ON verification.verification_requests (key_version);
ALTER TABLE verification.test_messages ADD COLUMN key_version integer;
CREATE INDEX test_messages_unsealed ON verification.test_messages (id) WHERE key_version IS NULL;
CREATE INDEX test_messages_key_version ON verification.test_messages (key_version);
