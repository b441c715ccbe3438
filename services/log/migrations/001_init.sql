-- The transparency log (DECISIONS.md, Proofs, "Transparency log"): one RFC 9162 tree per
-- environment. Entries and node hashes are append-only; a batch of entries, their nodes and the
-- checkpoint that covers them are written in one transaction, so the stored tree is always the
-- last signed checkpoint's.

-- The Ed25519 log key of each environment's log, with the log's origin (both fixed at its first start).
CREATE TABLE log.keys (
  environment text PRIMARY KEY CHECK (environment IN ('live', 'test')),
  origin text NOT NULL,
  -- the raw 32-byte Ed25519 public key, base64
  public_key text NOT NULL,
  -- AES-256-GCM under LOG_KEY_ENCRYPTION_KEY: base64(iv || tag || ciphertext), the origin as AAD
  private_key_enc text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- Proof events waiting for the sequencer: one row per event id, in arrival order.
CREATE TABLE log.pending (
  n bigserial PRIMARY KEY,
  event_id text NOT NULL UNIQUE,
  environment text NOT NULL CHECK (environment IN ('live', 'test')),
  -- the entry's members but logged_at (set when it is sequenced)
  fields jsonb NOT NULL,
  queued_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE log.entries (
  environment text NOT NULL CHECK (environment IN ('live', 'test')),
  leaf_index bigint NOT NULL,
  -- the proof event it was made from: an event is logged once
  event_id text NOT NULL UNIQUE,
  proof_id text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('issued', 'revoked')),
  entry bytea NOT NULL,
  PRIMARY KEY (environment, leaf_index)
);
CREATE INDEX entries_proof ON log.entries (environment, proof_id, kind);

-- The hash of every perfect subtree: level 0 holds the leaf hashes; a tlog-tiles tile at level L
-- is the row of level 8L.
CREATE TABLE log.nodes (
  environment text NOT NULL CHECK (environment IN ('live', 'test')),
  level smallint NOT NULL,
  idx bigint NOT NULL,
  hash bytea NOT NULL,
  PRIMARY KEY (environment, level, idx)
);

-- Each log's latest signed checkpoint.
CREATE TABLE log.checkpoints (
  environment text PRIMARY KEY CHECK (environment IN ('live', 'test')),
  size bigint NOT NULL,
  root bytea NOT NULL,
  note text NOT NULL,
  signed_at timestamptz NOT NULL
);

-- Who sequences: one replica at a time, while its lease lasts (renewed with every batch).
CREATE TABLE log.lease (
  name text PRIMARY KEY,
  holder text NOT NULL,
  expires_at timestamptz NOT NULL
);
INSERT INTO log.lease (name, holder, expires_at) VALUES ('sequencer', '', 'epoch');

-- The event consumer's state (see the platform's event transport).
CREATE TABLE log.event_consumed (
  consumer text NOT NULL,
  event_id text NOT NULL,
  consumed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer, event_id)
);
CREATE INDEX event_consumed_age ON log.event_consumed (consumed_at);
CREATE TABLE log.event_cursors (
  consumer text NOT NULL,
  source text NOT NULL,
  position bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (consumer, source)
);
