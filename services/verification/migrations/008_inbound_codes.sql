-- Reverse OTP over messaging providers: an inbound message carries only the code and the sender's
-- number, not the verification id. code_lookup is an HMAC of (channel, code) under the challenge
-- key, so a code can be found without storing it; set only for live phone verifications (test
-- verifications are completed by test-verify, never by a provider).
ALTER TABLE verification.verifications ADD COLUMN code_lookup text;
CREATE INDEX verifications_code_lookup ON verification.verifications (code_lookup) WHERE code_lookup IS NOT NULL;

-- A verification made by a session (phone-first or auth) records the session id; one per session,
-- so a retried session completion answers the verification made the first time.
ALTER TABLE verification.verifications ADD COLUMN origin text;
CREATE UNIQUE INDEX verifications_origin ON verification.verifications (origin) WHERE origin IS NOT NULL;

-- Test messages of test sessions (the message the user would send to the bot) live beside those
-- of test verifications.
ALTER TABLE verification.test_messages ALTER COLUMN verification_id DROP NOT NULL;
ALTER TABLE verification.test_messages ADD COLUMN session_id text;
ALTER TABLE verification.test_messages ADD CONSTRAINT test_messages_subject CHECK (verification_id IS NOT NULL OR session_id IS NOT NULL);
