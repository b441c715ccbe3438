-- The proof service consumes verification.redacted (docs/privacy.md): a redacted verification's
-- proof loses its stored SD-JWT VC (its disclosures hold the identifier). The consumer's cursor
-- and the ids it applied live here, as in the other consuming services.
CREATE TABLE proof.event_consumed (
  consumer text NOT NULL,
  event_id text NOT NULL,
  consumed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer, event_id)
);
CREATE INDEX event_consumed_age ON proof.event_consumed (consumed_at);
CREATE TABLE proof.event_cursors (
  consumer text NOT NULL,
  source text NOT NULL,
  position bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (consumer, source)
);
