-- Test proofs can never pass for live ones: every signing key belongs to one environment's set
-- (live keys are published at /.well-known/jwks.json, test keys only at jwks-test.json), and each
-- set has its own active key. The keys made before this split signed both kinds of proof; they
-- become live keys (what their live proofs need). Their old test proofs are told apart by their
-- `env` claim and the proof row's environment, and never validate as live.
ALTER TABLE proof.signing_keys ADD COLUMN environment text NOT NULL DEFAULT 'live' CHECK (environment IN ('live', 'test'));
ALTER TABLE proof.signing_keys ALTER COLUMN environment DROP DEFAULT;
DROP INDEX proof.signing_keys_one_active;
CREATE UNIQUE INDEX signing_keys_one_active ON proof.signing_keys (environment) WHERE status = 'active';

-- How control was shown (the `method` claim); null for proofs issued before every proof had one.
ALTER TABLE proof.proofs ADD COLUMN method text;
-- the revocation list is per environment
DROP INDEX proof.proofs_revoked;
CREATE INDEX proofs_revoked ON proof.proofs (environment, revoked_at) WHERE revoked_at IS NOT NULL;
