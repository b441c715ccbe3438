-- Every proof says how control was shown (its `method` claim) and the verification records the
-- same value when it completes: reverse_otp, otp, signature, oauth, api_key, bot_token, dns_txt,
-- http_file, dns_provider, reused_proof or test. Until it completes a verification has none. The
-- old value "challenge" named no method: those rows keep no method (their proofs carry no claim).
ALTER TABLE verification.verifications DROP CONSTRAINT IF EXISTS verifications_method_check;
ALTER TABLE verification.verifications ALTER COLUMN method DROP DEFAULT, ALTER COLUMN method DROP NOT NULL;
UPDATE verification.verifications SET method = NULL WHERE method = 'challenge';
ALTER TABLE verification.verifications ADD CONSTRAINT verifications_method_check CHECK (
  method IN ('reverse_otp', 'otp', 'signature', 'oauth', 'api_key', 'bot_token', 'dns_txt', 'http_file', 'dns_provider', 'reused_proof', 'test')
);
