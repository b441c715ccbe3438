-- Phone verifications: how the code travels (DECISIONS.md, "A proof is only ever issued on
-- evidence that came from the asset itself"). 'inbound' (reverse OTP): the user sends the shown
-- code from the phone and only that provider message completes it; 'outbound': the service sent
-- a code to the phone (Twilio Messages, WhatsApp template) and submit checks it. NULL for other types.
ALTER TABLE verification.verifications ADD COLUMN delivery text CHECK (delivery IN ('inbound', 'outbound'));
UPDATE verification.verifications SET delivery = 'inbound' WHERE type = 'phone' AND delivery IS NULL;
