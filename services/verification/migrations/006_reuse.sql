-- Smart reuse: a verification completed from an existing proof records how (method) and which
-- verification it reused; a request may bound the age of the proofs it accepts (seconds).
ALTER TABLE verification.verifications
  ADD COLUMN method text NOT NULL DEFAULT 'challenge' CHECK (method IN ('challenge', 'reused_proof')),
  ADD COLUMN reused_from text;
ALTER TABLE verification.verification_requests ADD COLUMN max_proof_age integer;
