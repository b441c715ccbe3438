-- Inbound codes are throttled per sender (DECISIONS.md, Sessions): after 10 unknown or wrong
-- codes in an hour a sender's messages are ignored (one reply says so) until the hour passes.
-- One row per provider message (its key: provider + message id), so a provider's retry of the
-- same message never counts twice. `sender` is an HMAC of the provider-attested number (WhatsApp,
-- SMS) or Telegram user id, never the number itself. kind 'strike': an unknown or wrong code;
-- 'ignored': a message dropped while throttled (the first one in an hour gets the reply).
-- Pruned with the handled messages.
CREATE TABLE session.inbound_strikes (
  message_key text PRIMARY KEY,
  sender text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('strike', 'ignored')),
  created_at timestamptz NOT NULL
);
CREATE INDEX inbound_strikes_sender ON session.inbound_strikes (sender, created_at);
