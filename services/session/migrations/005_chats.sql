-- Chats of every chat provider (Telegram, Viber): ids are the provider's, as text (a Viber user id
-- is not a number). A session's channel is one of the messaging provider table's (checked in code),
-- so adding a provider needs no migration.
ALTER TABLE session.sessions DROP CONSTRAINT sessions_channel_check;
ALTER TABLE session.telegram_chats RENAME TO chats;
ALTER TABLE session.chats ALTER COLUMN chat_id TYPE text, ALTER COLUMN user_id TYPE text;
ALTER TABLE session.chats ADD COLUMN provider text NOT NULL DEFAULT 'telegram';
ALTER TABLE session.chats DROP CONSTRAINT telegram_chats_pkey;
ALTER TABLE session.chats ADD PRIMARY KEY (provider, chat_id);
