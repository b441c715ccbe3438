-- How many times a request asset was started (at creation with identifier and channel, or from the
-- hosted page). At most 3 starts; the start past that fails the asset (starts is then 4), so an end
-- user cannot get fresh codes and tries without end (docs/send-limits.md).
ALTER TABLE verification.verification_request_assets ADD COLUMN starts integer NOT NULL DEFAULT 0;
UPDATE verification.verification_request_assets SET starts = 1 WHERE verification_id IS NOT NULL;
