-- Compatibility with the reference product's SDKs (DECISIONS.md): a verification may carry its own
-- webhook URL (callback_url, SSRF-checked at create); its verification.completed event goes there
-- too. (updated_at already exists; an ethereum wallet's chain id is the `Chain ID:` line of the
-- stored message it signs.)
ALTER TABLE verification.verifications ADD COLUMN IF NOT EXISTS callback_url text;
