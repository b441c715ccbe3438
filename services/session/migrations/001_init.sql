-- Phone-first sessions (sess_…, kind 'phone': the bot captures the number) and auth sessions
-- (auth_…, kind 'auth': 2FA, login, recovery on a known number). The session token in the deep
-- link is derived from the id with a server key (tokens.ts) and never stored; token_lookup is
-- its SHA-256, which is how an inbound message finds its session.
CREATE TABLE session.sessions (
  id text PRIMARY KEY,
  kind text NOT NULL CHECK (kind IN ('phone', 'auth')),
  tenant_id text NOT NULL,
  environment text NOT NULL CHECK (environment IN ('live', 'test')),
  channel text NOT NULL CHECK (channel IN ('telegram', 'whatsapp')),
  -- auth sessions: 2fa, login or recovery
  auth_type text,
  status text NOT NULL CHECK (status IN ('pending', 'verified', 'failed', 'expired')),
  -- auth: the number that must answer; phone-first: the number captured once verified
  phone_number text,
  token_lookup text NOT NULL UNIQUE,
  client_metadata jsonb,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  verified_at timestamptz,
  failed_at timestamptz,
  verification_id text,
  proof_token text,
  proof_expires_at timestamptz,
  updated_at timestamptz NOT NULL
);
CREATE INDEX sessions_due ON session.sessions (expires_at) WHERE status = 'pending';

-- Telegram conversations: what a chat started (/start <code or token>) while the bot waits for
-- the user to share their contact. One row per chat, replaced by the next /start, deleted once
-- settled; rows older than the longest challenge are pruned.
CREATE TABLE session.telegram_chats (
  chat_id bigint PRIMARY KEY,
  user_id bigint NOT NULL,
  -- 'code' (a phone verification's 6-character code) or 'session' (a session token)
  target_kind text NOT NULL CHECK (target_kind IN ('code', 'session')),
  target text NOT NULL,
  started_at timestamptz NOT NULL
);

-- Inbound provider messages already handled (providers retry): a repeat changes nothing twice.
-- Pruned after 7 days.
CREATE TABLE session.inbound_messages (
  provider text NOT NULL,
  message_id text NOT NULL,
  outcome text,
  received_at timestamptz NOT NULL,
  PRIMARY KEY (provider, message_id)
);
CREATE INDEX inbound_messages_received ON session.inbound_messages (received_at);
