-- Issue 26: the proof formats a verification asks for, its proof's salt and credential, and the
-- suspended status (DECISIONS.md, Proofs and Current control).
ALTER TABLE verification.verifications ADD COLUMN proof_format text NOT NULL DEFAULT 'jwt' CHECK (proof_format IN ('jwt', 'sd-jwt-vc'));
-- the holder's public JWK (cnf of the proof)
ALTER TABLE verification.verifications ADD COLUMN holder_key jsonb;
-- the proof's identifier_salt (hex; NULL on proofs issued before hashes were salted) and its SD-JWT VC
ALTER TABLE verification.verifications ADD COLUMN proof_identifier_salt text;
ALTER TABLE verification.verifications ADD COLUMN proof_sd_jwt_vc text;
ALTER TABLE verification.verifications ADD COLUMN suspended_at timestamptz;
ALTER TABLE verification.verifications ADD COLUMN suspended_reason text;
ALTER TABLE verification.verifications DROP CONSTRAINT verifications_status_check;
ALTER TABLE verification.verifications ADD CONSTRAINT verifications_status_check
  CHECK (status IN ('pending', 'verified', 'suspended', 'failed', 'expired', 'revoked'));
-- each asset of a request may ask for its own format and holder key
ALTER TABLE verification.verification_request_assets ADD COLUMN proof_format text NOT NULL DEFAULT 'jwt' CHECK (proof_format IN ('jwt', 'sd-jwt-vc'));
ALTER TABLE verification.verification_request_assets ADD COLUMN holder_key jsonb;
