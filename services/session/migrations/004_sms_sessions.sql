-- Sessions on the channel sms (DECISIONS.md "Compatibility"): the user texts the session token to our SMS number.
ALTER TABLE session.sessions DROP CONSTRAINT sessions_channel_check;
ALTER TABLE session.sessions ADD CONSTRAINT sessions_channel_check CHECK (channel IN ('telegram', 'whatsapp', 'sms'));
