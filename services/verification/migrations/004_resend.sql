-- Email code resends (DECISIONS.md, "/resend"): how many times the code was resent, and when a
-- code was last sent (NULL: only the one sent at creation, i.e. created_at). The 60 s and
-- 5-resend rules are checked in the UPDATE that writes the new code, so concurrent resends
-- cannot both pass.
ALTER TABLE verification.verifications
  ADD COLUMN resend_count integer NOT NULL DEFAULT 0,
  ADD COLUMN code_sent_at timestamptz;
