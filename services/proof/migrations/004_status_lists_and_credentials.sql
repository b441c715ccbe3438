-- Issue 26: proofs that show no more than they must.
-- identifier_salt: the 16 random bytes (hex) of the salted identifier_hash; NULL on proofs issued
-- before (their hash is the identifier's plain SHA-256 and stays so).
ALTER TABLE proof.proofs ADD COLUMN identifier_salt text;
-- the transparency log's subject (a public asset's identifier, else the salted hash): what the
-- proof events carry
ALTER TABLE proof.proofs ADD COLUMN subject text;
-- Token Status List: the list (per environment, numbered from 0) and the index in it. NULL on
-- proofs issued before lists existed.
ALTER TABLE proof.proofs ADD COLUMN status_list integer;
ALTER TABLE proof.proofs ADD COLUMN status_idx integer;
-- Suspended: a state between valid and revoked (revoked stays final and wins).
ALTER TABLE proof.proofs ADD COLUMN suspended_at timestamptz;
ALTER TABLE proof.proofs ADD COLUMN suspended_reason text;
-- SD-JWT VC: the credential issued beside the JWT (NULL: JWT only), and the holder's public key.
ALTER TABLE proof.proofs ADD COLUMN sd_jwt_vc text;
ALTER TABLE proof.proofs ADD COLUMN holder_key jsonb;
-- a list is built from its entries that are not 0 (revoked or suspended)
CREATE INDEX proofs_status_entries ON proof.proofs (environment, status_list) WHERE revoked_at IS NOT NULL OR suspended_at IS NOT NULL;
-- An index is never reused and no row is hot: each process takes a block of STATUS_BLOCK indexes
-- with one nextval (a sequence is not a row: no lock, no wait) and hands them out itself.
CREATE SEQUENCE proof.status_blocks_live INCREMENT BY 1000 MINVALUE 0 START WITH 0;
CREATE SEQUENCE proof.status_blocks_test INCREMENT BY 1000 MINVALUE 0 START WITH 0;
-- Key-binding JWTs accepted once per (credential, nonce) on every replica; a row is needed only
-- while its KB-JWT's iat is inside the accepted window, then a sweep removes it.
CREATE TABLE proof.presentations_seen (
  credential_sha256 text NOT NULL,
  nonce_sha256 text NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (credential_sha256, nonce_sha256)
);
CREATE INDEX presentations_seen_expiry ON proof.presentations_seen (expires_at);
